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
	"github.com/prometheus/client_golang/prometheus"

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
	Notify      []Sink
}

// Sink is what one notify sink reads: its durable consumer, the subjects
// that consumer filters and, for an alertmanager sink, the consumer its
// replay reads ("" for none).
type Sink struct {
	Durable string
	Filters []string
	Replay  string
}

// SubscriberConsumer is the one durable consumer the subscriber role
// may keep.
const SubscriberConsumer = "subscriber"

// SubscriberSubjects are the subjects the subscriber role reads, below
// the prefix.
var SubscriberSubjects = []string{"findings.>", "runs.>", "approvals.>"}

// jsAPI names the JetStream API subjects of one stream.
type jsAPI struct{ stream string }

func (a jsAPI) streamInfo() string { return "$JS.API.STREAM.INFO." + a.stream }

// create is the create subject of consumer c that pins its filter: the
// server refuses a filter other than the one in the subject.
func (a jsAPI) create(c, filter string) string {
	return "$JS.API.CONSUMER.CREATE." + a.stream + "." + c + "." + filter
}

// createAnyFilter is the create subject of consumer c without a filter:
// the only one a consumer of several filters can use.
func (a jsAPI) createAnyFilter(c string) string {
	return "$JS.API.CONSUMER.CREATE." + a.stream + "." + c
}

func (a jsAPI) info(c string) string   { return "$JS.API.CONSUMER.INFO." + a.stream + "." + c }
func (a jsAPI) next(c string) string   { return "$JS.API.CONSUMER.MSG.NEXT." + a.stream + "." + c }
func (a jsAPI) delete(c string) string { return "$JS.API.CONSUMER.DELETE." + a.stream + "." + c }
func (a jsAPI) ack(c string) string    { return "$JS.ACK." + a.stream + "." + c + ".>" }

// Permissions are the role's permissions on the server, the one table of
// them (docs/NATS.md, embedded server credentials). deploy/nats-example.conf
// gives the same users the same permissions (a test in deploy/ compares
// them), and a test tries every JetStream API verb with each seed:
//   - only the daemon manages the stream and patrold's consumers, and
//     nobody deletes the stream or a consumer of patrold;
//   - the worker publishes outcomes and session calls, and reads only the
//     work queue, whose filter it cannot change;
//   - notify reads its sinks' consumers, each on the sink's filter, and
//     an alertmanager sink's replay consumer; it publishes nothing;
//   - the subscriber reads findings, runs and approvals, keeps one
//     consumer named "subscriber" on those subjects and publishes nothing.
func (r Role) Permissions(n Names) *server.Permissions {
	p, js := n.Prefix, jsAPI{n.Stream}
	stem := func(stem string) string { return stem + "." + p }
	inbox := &server.SubjectPermission{Allow: []string{"_INBOX.>"}}
	switch r {
	case RoleDaemon:
		subs := []string{p + ".>", "$KV." + n.LeaseBucket + ".>", "$O." + contracts.SeedBucket + ".>", "_INBOX.>",
			stem(contracts.StemForward), stem(contracts.StemSessions) + ".>", stem(contracts.StemSeed), stem(contracts.StemSeed) + ".>", stem(contracts.StemTrigger), "$SRV.>"}
		pub := slices.Concat(subs[:1], []string{"$JS.API.>", "$JS.ACK.>"}, subs[1:])
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: pub, Deny: []string{
				//mutate:nats-daemon-keeps-stream ./bus/embedded ^TestRolesOnTheJetStreamAPI$
				"$JS.API.STREAM.DELETE.>",
				//mutate:nats-daemon-keeps-consumers ./bus/embedded ^TestRolesOnTheJetStreamAPI$
				"$JS.API.CONSUMER.DELETE.>",
			}},
			Subscribe: &server.SubjectPermission{Allow: subs},
		}
	case RoleWorker:
		q := n.WorkQueue
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{
				contracts.FullSubject(p, contracts.SubjectRemediationOutcomes),
				stem(contracts.StemSessions) + ".>",
				js.streamInfo(),
				//mutate:nats-worker-takes-work-queue ./daemon ^TestStandaloneWorker$
				js.create(q, contracts.FullSubject(p, contracts.SubjectRemediationRequests)),
				js.info(q),
				js.next(q),
				js.ack(q),
			}},
			Subscribe: inbox,
		}
	case RoleNotify:
		pub := []string{js.streamInfo()}
		for _, k := range n.Notify {
			create := []string{js.createAnyFilter(k.Durable)}
			// A list of filters cannot be pinned; one filter is.
			//mutate:nats-notify-filter-pinned ./bus/embedded ^TestRolesOnTheJetStreamAPI$
			if len(k.Filters) == 1 {
				create = []string{js.create(k.Durable, k.Filters[0])}
			}
			pub = slices.Concat(pub, create, []string{js.info(k.Durable), js.next(k.Durable), js.ack(k.Durable)})
			if k.Replay != "" {
				pub = append(pub, js.create(k.Replay, k.Filters[0]), js.next(k.Replay))
			}
		}
		return &server.Permissions{Publish: &server.SubjectPermission{Allow: pub}, Subscribe: inbox}
	case RoleSubscriber:
		var subs, create []string
		for _, s := range SubscriberSubjects {
			subs = append(subs, p+"."+s)
			create = append(create, js.create(SubscriberConsumer, p+"."+s))
		}
		c := SubscriberConsumer
		own := []string{
			js.info(c),
			//mutate:nats-subscriber-replays ./daemon ^TestDocumentedReplayWorks$
			js.next(c),
			js.delete(c),
			js.ack(c),
		}
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: slices.Concat([]string{js.streamInfo()}, create, own)},
			Subscribe: &server.SubjectPermission{Allow: append(subs, "_INBOX.>")},
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
	//mutate:embedded-creds-private ./bus/embedded Test
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
// data directory), their permissions naming Names. Registerer (nil:
// none) gets the count of the requests the server refused.
type Auth struct {
	Dir        string
	Names      Names
	Registerer prometheus.Registerer
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
		refused, err := NewRefusals(a.Registerer)
		if err != nil {
			return nil, err
		}
		return startServer(opts, logger, refused)
	}
}
