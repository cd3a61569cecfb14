package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/patrold/patrold/contracts"
)

// Role is a user of the embedded server. Each role has its own nkey,
// generated on first start, and the permissions its process needs
// (docs/NATS.md, embedded server credentials).
type Role string

// The roles of the embedded server.
const (
	// RoleDaemon is `patrold serve`: everything but deleting a stream
	// or a consumer.
	RoleDaemon Role = "daemon"
	// RoleWorker is `patrold worker`: the work queue, outcomes and the
	// session service.
	RoleWorker Role = "worker"
	// RoleNotify is `patrold notify`: the consumers of its sinks.
	RoleNotify Role = "notify"
	// RoleSubscriber reads events and publishes nothing.
	RoleSubscriber Role = "subscriber"
)

// Roles lists every role, in the order of deploy/nats-example.conf.
var Roles = []Role{RoleDaemon, RoleWorker, RoleNotify, RoleSubscriber}

// SeedFile is the name of a role's nkey seed file in the data
// directory.
func SeedFile(r Role) string { return "nats-" + string(r) + ".nk" }

// Names are what the permissions name: the subject prefix, the stream,
// the lease bucket and the durable consumers of the work queue, of the
// outcomes and of the notify sinks.
type Names struct {
	Prefix      string
	Stream      string
	LeaseBucket string
	WorkQueue   string
	Outcomes    string
	Notify      []string
}

// SubscriberConsumer is the one durable consumer the subscriber role
// may keep.
const SubscriberConsumer = "subscriber"

// Permissions are the role's permissions on the server. They are the
// ones deploy/nats-example.conf gives the same user (a test in deploy/
// compares them):
//   - nobody deletes a stream or a consumer;
//   - the worker publishes outcomes and session calls, and reads only the
//     work queue;
//   - notify reads its sinks' consumers and ephemeral ones (an
//     alertmanager sink's replay), never the work queue's, the outcomes'
//     or the subscriber's, and publishes nothing;
//   - the subscriber reads findings, runs and approvals, keeps one
//     consumer named "subscriber" and publishes nothing.
func (r Role) Permissions(n Names) *server.Permissions {
	p, s := n.Prefix, n.Stream
	stem := func(stem string) string { return stem + "." + p }
	jsRead := []string{"$JS.API.INFO", "$JS.API.STREAM.INFO." + s}
	jsEnsure := slices.Concat(jsRead, []string{"$JS.API.STREAM.CREATE." + s, "$JS.API.STREAM.UPDATE." + s})
	c := "$JS.API.CONSUMER."
	consumer := func(durable string, del bool) []string {
		out := []string{c + "CREATE." + s + "." + durable + ".>", c + "INFO." + s + "." + durable, c + "MSG.NEXT." + s + "." + durable}
		if del {
			out = append(out, c+"DELETE."+s+"."+durable)
		}
		return append(out, "$JS.ACK."+s+"."+durable+".>")
	}
	inbox := []string{"_INBOX.>"}
	switch r {
	case RoleDaemon:
		subs := []string{p + ".>", "$KV." + n.LeaseBucket + ".>", "$O." + contracts.SeedBucket + ".>", "_INBOX.>",
			stem(contracts.StemForward), stem(contracts.StemSessions) + ".>", stem(contracts.StemSeed), stem(contracts.StemTrigger), "$SRV.>"}
		pub := slices.Concat(subs[:1], []string{"$JS.API.>", "$JS.ACK.>"}, subs[1:])
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub, Deny: []string{"$JS.API.STREAM.DELETE.>", "$JS.API.CONSUMER.DELETE.>"}},
			Subscribe: &server.SubjectPermission{Allow: subs},
		}
	case RoleWorker:
		pub := slices.Concat([]string{contracts.FullSubject(p, contracts.SubjectRemediationOutcomes), stem(contracts.StemSessions) + ".>"},
			jsEnsure, consumer(n.WorkQueue, false))
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub},
			Subscribe: &server.SubjectPermission{Allow: inbox},
		}
	case RoleNotify:
		pub := slices.Clone(jsEnsure)
		for _, d := range n.Notify {
			pub = append(pub, consumer(d, false)...)
		}
		pub = append(pub, c+"CREATE."+s+".*."+p+".>", c+"INFO."+s+".*", c+"MSG.NEXT."+s+".*")
		var deny []string
		for _, d := range []string{n.WorkQueue, n.Outcomes, SubscriberConsumer} {
			deny = append(deny, consumer(d, true)...)
		}
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: pub, Deny: deny},
			Subscribe: &server.SubjectPermission{Allow: inbox},
		}
	case RoleSubscriber:
		subs := []string{p + ".findings.>", p + ".runs.>", p + ".approvals.>", "_INBOX.>"}
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: slices.Concat(jsRead, consumer(SubscriberConsumer, true))},
			Subscribe: &server.SubjectPermission{Allow: subs},
		}
	}
	// Unknown roles may do nothing.
	return &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{">"}}, Subscribe: &server.SubjectPermission{Deny: []string{">"}}}
}

// LoadOrCreateSeeds returns each role's public key, reading its seed
// file under dir and generating the missing ones (mode 0600). A seed
// file group or others can read is refused.
func LoadOrCreateSeeds(dir string) (map[Role]string, error) {
	pubs := make(map[Role]string, len(Roles))
	for _, r := range Roles {
		pub, err := loadOrCreateSeed(filepath.Join(dir, SeedFile(r)))
		if err != nil {
			return nil, err
		}
		pubs[r] = pub
	}
	return pubs, nil
}

func loadOrCreateSeed(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return LoadSeed(path)
	case err != nil:
		return "", fmt.Errorf("nats credentials: %w", err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", errors.Join(fmt.Errorf("nats credentials %s: %w", path, err), f.Close(), os.Remove(path))
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", errors.Join(fmt.Errorf("nats credentials %s: %w", path, err), f.Close(), os.Remove(path))
	}
	_, werr := f.Write(append(seed, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return "", fmt.Errorf("nats credentials %s: %w", path, err)
	}
	return LoadSeed(path)
}

// LoadSeed reads an nkey user seed file and returns its public key; a
// file group or others can read is refused.
func LoadSeed(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("nats credentials: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("nats credentials %s: mode %04o lets group or others read it; chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("nats credentials: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err != nil {
		return "", fmt.Errorf("nats credentials %s: %w", path, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("nats credentials %s: %w", path, err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("nats credentials %s: not an nkey user seed", path)
	}
	return pub, nil
}

// RequireUsers makes the server accept only the roles' nkeys, each with
// its permissions.
func RequireUsers(opts *server.Options, pubs map[Role]string, n Names) {
	opts.Nkeys = nil
	for _, r := range Roles {
		if pub, ok := pubs[r]; ok {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: pub, Permissions: r.Permissions(n)})
		}
	}
}

// Auth is the embedded server's users: their seeds under Dir (the
// data directory), their permissions naming Names.
type Auth struct {
	Dir   string
	Names Names
}

// Starter returns the embedded server's start for bus.WithEmbedded: it
// loads (or generates) the seeds, then starts a server that requires
// them.
func (a Auth) Starter() func(listen, storeDir string, logger *slog.Logger) (*server.Server, error) {
	return func(listen, storeDir string, logger *slog.Logger) (*server.Server, error) {
		opts, err := ServerOptions(listen, storeDir)
		if err != nil {
			return nil, err
		}
		pubs, err := LoadOrCreateSeeds(a.Dir)
		if err != nil {
			return nil, err
		}
		RequireUsers(opts, pubs, a.Names)
		return StartServer(opts, logger)
	}
}
