package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/snapshot"
)

// The PBS source reads a Proxmox Backup Server (API of PBS 3) with the
// same client as the PVE source: an API token, a CA file or a pinned
// fingerprint. What it reads (docs/SOURCES.md#pbs):
//   - GET /status/datastore-usage: every datastore, a storage resource
//     storage/<node>/<store> whose usage is high_disk's;
//   - GET /admin/verify, /admin/prune, /admin/sync and /admin/gc: each
//     job's last run (backup_store.jobs);
//   - GET /admin/datastore/<store>/snapshots: the backup snapshots whose
//     last verification failed (backup_store.verify_failed).
//
// The datastores failing fails the collection. A job list that fails
// leaves backup_store out of every datastore (the jobs are not known,
// so backup_job_failed is not judged); a snapshot list that fails leaves
// it out of that datastore. Either is a source-level problem: the run is
// degraded. /admin/gc answering 404 (a PBS before 3.3) is a warning: the
// garbage collection jobs are then not read.

// PBSOptions configure the PBS source (YAML section source.pbs).
type PBSOptions struct {
	// URL is the API address of the server, https://host:8007.
	URL string `koanf:"url" yaml:"url" json:"url"`
	// Node names the server in resource ids (storage/<node>/<store>) and
	// as the node of its findings; empty: the first label of the URL's
	// host.
	Node string `koanf:"node" yaml:"node" json:"node"`
	// TokenID is the API token, user@realm!name (the Audit role on /
	// is enough).
	TokenID string `koanf:"token_id" yaml:"token_id" json:"token_id"`
	// TokenSecretFile holds the token's secret; re-read on every
	// collection.
	TokenSecretFile string     `koanf:"token_secret_file" yaml:"token_secret_file" json:"token_secret_file"`
	TLS             TLSOptions `koanf:"tls" yaml:"tls" json:"tls"`
	// Timeout bounds one API request. Zero means DefaultTimeout.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout" json:"timeout"`

	// Now is the clock of taken_at; nil means time.Now.
	Now func() time.Time `koanf:"-" yaml:"-" json:"-"`
	// Registerer receives the source's metrics; nil disables them.
	Registerer promclient.Registerer `koanf:"-" yaml:"-" json:"-"`
	// Metrics, when set, are used instead of registering new ones on
	// Registerer (a source rebuilt on reload).
	Metrics *PBSMetrics `koanf:"-" yaml:"-" json:"-"`
}

// PBSSourceName is a PBS snapshot's source field.
const PBSSourceName = "pbs"

// DefaultPBSOptions returns the options an empty source.pbs section
// yields.
func DefaultPBSOptions() PBSOptions { return PBSOptions{Timeout: DefaultTimeout} }

// Validate reports every problem, each naming its key under source.pbs.
func (o PBSOptions) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("source.pbs.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	validateAPI(add, "https://pbs1.example:8007", "patrold@pbs!patrol", o.URL, o.TokenID, o.TokenSecretFile, o.TLS, o.Timeout)
	if o.Node != "" && (strings.ContainsAny(o.Node, "/ \t") || snapshot.IDProblem(o.Node) != "") {
		add("node", "%q is not a node name", o.Node)
	}
	return errors.Join(errs...)
}

// PBS collects snapshots from one Proxmox Backup Server.
type PBS struct {
	opts   PBSOptions
	node   string
	client *client
}

var _ snapshot.Source = (*PBS)(nil)

// NewPBS validates opts, reads the CA file and checks the secret file.
// It does not contact the server.
func NewPBS(opts PBSOptions) (*PBS, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	node := opts.Node
	if node == "" {
		u, _ := url.Parse(opts.URL)
		node, _, _ = strings.Cut(u.Hostname(), ".")
	}
	c, err := newClient(endpoint{key: "source.pbs", scheme: pbsScheme, url: opts.URL, tokenID: opts.TokenID,
		file: opts.TokenSecretFile, timeout: opts.Timeout, concurrency: 2, tls: opts.TLS})
	if err != nil {
		return nil, err
	}
	// Counted on the patrold_source_pbs_* families (the
	// patrold_source_proxmox_* ones are the PVE cluster's).
	if opts.Metrics != nil {
		c.metrics = opts.Metrics.m
	} else if c.metrics, err = newMetrics(opts.Registerer, pbsAPI); err != nil {
		return nil, err
	}
	return &PBS{opts: opts, node: node, client: c}, nil
}

// The wire shapes of the PBS 3 endpoints read.
type (
	pbsUsage struct {
		Store string `json:"store"`
		Total number `json:"total"`
		Used  number `json:"used"`
		Error string `json:"error"`
	}
	pbsJob struct {
		ID       string `json:"id"`
		Store    string `json:"store"`
		State    string `json:"last-run-state"`
		EndTime  number `json:"last-run-endtime"`
		UPID     string `json:"last-run-upid"`
		Disabled bool   `json:"disable"`
	}
	pbsSnapshot struct {
		Type         string `json:"backup-type"`
		ID           text   `json:"backup-id"`
		Time         number `json:"backup-time"`
		Verification *struct {
			State string `json:"state"`
		} `json:"verification"`
	}
)

// pbsJobLists are the job endpoints and the job type each lists.
var pbsJobLists = []struct{ typ, path string }{
	{"verify", "verify"}, {"prune", "prune"}, {"sync", "sync"}, {"gc", "gc"},
}

// Collect reads the server now.
func (p *PBS) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	now := p.opts.Now().UTC().Truncate(time.Second)
	sess, err := p.client.session()
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	var usage []pbsUsage
	if err := sess.get(ctx, []string{"status", "datastore-usage"}, nil, func(d []byte) (err error) {
		usage, err = decodeList[pbsUsage](d)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	var problems []snapshot.Problem
	jobs := map[string][]snapshot.Job{}
	jobsKnown := true
	for _, l := range pbsJobLists {
		var list []pbsJob
		err := sess.get(ctx, []string{"admin", l.path}, nil, func(d []byte) (err error) {
			list, err = decodeList[pbsJob](d)
			return err
		})
		var ae *APIError
		switch {
		case l.typ == "gc" && errors.As(err, &ae) && ae.Status == 404:
			problems = append(problems, snapshot.Problem{ID: SourceProblemID, Index: 0, Field: "GET /admin/gc", Warning: true,
				Problem: "this server does not list garbage collection jobs (PBS before 3.3): their last runs are not read"})
			continue
		case err != nil:
			problems = append(problems, snapshot.Problem{ID: SourceProblemID, Index: -1, Field: endpointOf([]string{"admin", l.path}),
				Problem: trimEndpoint(err, endpointOf([]string{"admin", l.path})) + "; the jobs of every datastore left out"})
			jobsKnown = false
			continue
		}
		for _, j := range list {
			if j.Disabled || j.Store == "" {
				continue
			}
			id := j.ID
			if id == "" {
				id = j.Store // a garbage collection job is its datastore's
			}
			jobs[j.Store] = append(jobs[j.Store], pbsJobOf(l.typ, id, j))
		}
	}
	var out []snapshot.Resource
	for _, u := range usage {
		r := snapshot.Resource{ID: "storage/" + p.node + "/" + u.Store, Kind: snapshot.KindStorage, Name: u.Store,
			Parent: "node/" + p.node, Status: snapshot.StatusOnline, Labels: map[string]string{"type": "pbs"}}
		if u.Error != "" {
			r.Status = snapshot.StatusUnknown
			r.Notes = clip(u.Error)
			out = append(out, r)
			continue
		}
		if u.Total.set && u.Used.set && u.Total.v > 0 {
			r.Metrics = snapshot.MetricsOf(map[string]float64{snapshot.MetricUsage: clampPercent(100 * u.Used.v / u.Total.v)})
		}
		if jobsKnown {
			failed, err := p.verifyFailed(ctx, sess, u.Store)
			if err != nil {
				ep := endpointOf([]string{"admin", "datastore", u.Store, "snapshots"})
				problems = append(problems, snapshot.Problem{ID: r.ID, Index: -1, Field: ep,
					Problem: trimEndpoint(err, ep) + "; its jobs and verifications left out"})
			} else {
				sort.Slice(jobs[u.Store], func(i, j int) bool {
					a, b := jobs[u.Store][i], jobs[u.Store][j]
					return a.Type < b.Type || (a.Type == b.Type && a.ID < b.ID)
				})
				r.BackupStore = &snapshot.BackupStore{Jobs: jobs[u.Store], VerifyFailed: failed}
			}
		}
		out = append(out, r)
	}
	snap := &snapshot.Snapshot{Version: snapshot.Version, TakenAt: now, Source: PBSSourceName, Resources: out}
	data, err := snapshot.Encode(snap)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: encode: %w", err)
	}
	decoded, invalid, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	return decoded, append(invalid, problems...), nil
}

// pbsJobOf maps a job's last-run state: "OK", "WARNINGS: n", "unknown",
// or the error text of a failed run; no state and an UPID is a run in
// progress; neither is a job that has not run.
func pbsJobOf(typ, id string, j pbsJob) snapshot.Job {
	out := snapshot.Job{ID: id, Type: typ}
	if j.EndTime.set && j.EndTime.v > 0 {
		t := time.Unix(int64(j.EndTime.v), 0).UTC()
		out.LastFinishedAt = &t
	}
	state := strings.TrimSpace(j.State)
	switch {
	case state == "" && j.UPID != "":
		out.LastStatus = snapshot.BackupRunning
	case state == "":
	case strings.EqualFold(state, "ok"):
		out.LastStatus = snapshot.BackupOK
	case strings.HasPrefix(strings.ToUpper(state), "WARNINGS"):
		out.LastStatus = snapshot.BackupWarning
	case strings.EqualFold(state, "unknown"):
		out.LastStatus = snapshot.BackupUnknown
	default:
		out.LastStatus, out.LastError = snapshot.BackupFailed, clip(state)
	}
	return out
}

// verifyFailed lists a datastore's backup snapshots whose last
// verification failed, newest first, at most snapshot.MaxVerifyFailed.
func (p *PBS) verifyFailed(ctx context.Context, sess *session, store string) ([]string, error) {
	var list []pbsSnapshot
	if err := sess.get(ctx, []string{"admin", "datastore", store, "snapshots"}, nil, func(d []byte) (err error) {
		list, err = decodeList[pbsSnapshot](d)
		return err
	}); err != nil {
		return nil, err
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Time.v > list[j].Time.v })
	var out []string
	for _, s := range list {
		if s.Verification == nil || s.Verification.State != "failed" || len(out) == snapshot.MaxVerifyFailed {
			continue
		}
		at := time.Unix(int64(s.Time.v), 0).UTC().Format(time.RFC3339)
		out = append(out, s.Type+"/"+string(s.ID)+"/"+at)
	}
	return out, nil
}

func clampPercent(v float64) float64 { return min(100, max(0, v)) }
