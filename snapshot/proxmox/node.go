package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/patrold/patrold/snapshot"
)

// Bounds of what is read per node and collection.
const (
	taskLimit = 1000 // vzdump tasks listed
	// recentLimit bounds the node's recent tasks of every type: the
	// guests' running tasks, and what took or left their locks.
	recentLimit = 500
	logLimit    = 5000 // lines of one task log
	logBudget   = 5    // task logs read
)

// nodeWork is what is read through one online node.
type nodeWork struct {
	name     string
	storages []storageEntry    // backup storages read through this node
	guests   []clusterResource // guests on this node
	tracked  map[int64]bool    // guests on this node a backup job covers
}

// nodeResult is what was read through one node. Anything not read is
// absent and its failure is in problems.
type nodeResult struct {
	status      *nodeStatus                         // nil when GET /nodes/{node}/status was not read
	replication map[int64][]snapshot.ReplicationJob // nil when not read
	certificate *snapshot.Certificate               // nil when not read, or none expires
	updates     *snapshot.Updates                   // nil when not read
	disks       []diskRead
	pools       []poolRead
	tasksRead   bool
	// recent are the node's newest tasks of every type, newest first;
	// recentRead says they were read.
	recent      []task
	recentRead  bool
	changes     *taskChanges        // touchedBy of recent; nil when not read
	runs        map[int64]backupRun // newest vzdump outcome per guest on this node
	runsFailed  map[int64]bool      // a task log needed for the guest was not read
	volumes     map[string][]volume // backup storage id -> volumes
	addresses   map[int64][]string
	configs     map[int64]guestConfig // the guests' configs that were read
	snapshots   map[int64]*snapshot.Snapshots
	agentDenied bool
	problems    []snapshot.Problem
}

type diskRead struct {
	disk  disk
	smart *smart // nil when the SMART request failed
}

type poolRead struct {
	pool   zpool
	detail *zpoolDetail // nil when the detail request failed
}

// nodes reads every work item, at most Concurrency nodes at once.
func (s *Source) nodes(ctx context.Context, sess *session, work []nodeWork) []nodeResult {
	out := make([]nodeResult, len(work))
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for i := range work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				out[i] = nodeResult{problems: []snapshot.Problem{nodeProblem(work[i].name, "GET /nodes/"+work[i].name, fmt.Errorf("not started: %w", ctx.Err()))}}
				return
			}
			w := &worker{s: s, sess: sess, ctx: ctx, work: work[i], halt: &atomic.Bool{}}
			out[i] = w.run()
		}()
	}
	wg.Wait()
	return out
}

// worker reads one node's endpoints in sequence; only the per-guest
// reads overlap, each guest on a worker of its own (eachGuest). Once the
// node is unreachable its remaining endpoints are skipped.
type worker struct {
	s    *Source
	sess *session
	ctx  context.Context
	work nodeWork
	down bool         // this worker saw the node stop answering
	halt *atomic.Bool // any worker of the node saw it stop answering
	res  nodeResult
	plan []step // the reads in order (steps)
	at   int    // the step being read
}

// stopped: the node stopped answering; nothing more is asked of it.
func (w *worker) stopped() bool { return w.down || (w.halt != nil && w.halt.Load()) }

func nodeProblem(node, endpoint string, err error) snapshot.Problem {
	msg := strings.TrimPrefix(err.Error(), endpoint+": ")
	return snapshot.Problem{ID: "node/" + node, Index: -1, Field: endpoint,
		Problem: fmt.Sprintf("node %s: %s", node, msg)}
}

// get reads one endpoint of the node; false means it was not read (and why
// is recorded), or the node was already down.
func (w *worker) get(segments []string, q url.Values, decode func([]byte) error) bool {
	if w.stopped() {
		return false
	}
	err := w.sess.get(w.ctx, segments, q, decode)
	if err == nil {
		return true
	}
	p := nodeProblem(w.work.name, endpointOf(segments), err)
	if errors.Is(err, ErrNodeUnreachable) || errors.Is(err, ErrUnauthorized) || w.ctx.Err() != nil {
		w.down = true
		if w.halt != nil {
			w.halt.Store(true)
		}
		if rest := w.rest(); rest != "" {
			p.Problem += fmt.Sprintf("; the rest of node %s (%s) was not read", w.work.name, rest)
		}
	} else {
		gapOf(&p, segments, err)
	}
	w.res.problems = append(w.res.problems, p)
	return false
}

// step is one read of a worker's sequence: the endpoint families it
// surely asks (not those its answers lead to, such as SMART per disk),
// and whether it asks anything of this node.
type step struct {
	families []string
	read     func()
	asks     func() bool
}

// steps are the worker's reads in order.
func (w *worker) steps() []step {
	always := func() bool { return true }
	return []step{
		{[]string{"node_status"}, w.readStatus, always},
		{[]string{"replication"}, w.readReplication, always},
		{[]string{"certificates"}, w.readCertificates, always},
		{[]string{"apt_update"}, w.readUpdates, always},
		{[]string{"disks_list"}, w.readDisks, always},
		{[]string{"disks_zfs"}, w.readPools, always},
		{[]string{"tasks"}, w.readTasks, always},
		{[]string{"tasks"}, w.readRecent, always},
		{[]string{"storage_content"}, w.readVolumes, func() bool { return len(w.work.storages) > 0 }},
		{[]string{"guest_config", "guest_snapshots"}, w.readGuests, func() bool { return len(w.work.guests) > 0 }},
		{[]string{"guest_agent"}, w.readAgents, func() bool {
			return w.s.opts.GuestAgent.Enabled && slices.ContainsFunc(w.work.guests, agentAsked)
		}},
	}
}

// rest names what the steps after the current one would have read, in
// the words of pveEndpoints: what a node that stopped answering skips.
func (w *worker) rest() string { return w.skipped(w.at + 1) }

// skipped names what the steps from the from'th on would have read.
func (w *worker) skipped(from int) string {
	var words []string
	if from < len(w.plan) {
		for _, st := range w.plan[from:] {
			if !st.asks() {
				continue
			}
			for _, f := range st.families {
				if e, ok := endpointOfFamily(f); ok && !slices.Contains(words, e.what) {
					words = append(words, e.what)
				}
			}
		}
	}
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// gapOf marks p as a coverage gap when err is a refusal (HTTP 403) or an
// endpoint this PVE does not serve (HTTP 501): a warning naming the check,
// never a failure of the collection (docs/SOURCES.md).
func gapOf(p *snapshot.Problem, segments []string, err error) {
	var ae *APIError
	if !errors.As(err, &ae) || (ae.Status != http.StatusForbidden && ae.Status != http.StatusNotImplemented) {
		return
	}
	family := endpointFamily(segments)
	e, _ := endpointOfFamily(family)
	g := &snapshot.Gap{Check: family, Keys: e.keys, Endpoint: endpointOf(segments), Status: ae.Status}
	if ae.Status == http.StatusForbidden {
		g.Privilege = e.privilege
		p.Problem += "; grant the API token " + e.privilege + " for " + strings.Join(e.keys, ", ")
	} else {
		p.Problem += "; this PVE does not serve it: " + strings.Join(e.keys, ", ") + " not evaluated"
	}
	//mutate:gap-is-a-warning ./snapshot/proxmox ^TestGapOf
	p.Warning = true
	p.Gap = g
}

func (w *worker) run() nodeResult {
	w.res.runs, w.res.runsFailed = map[int64]backupRun{}, map[int64]bool{}
	w.res.volumes, w.res.addresses = map[string][]volume{}, map[int64][]string{}
	w.res.configs = map[int64]guestConfig{}
	w.res.snapshots = map[int64]*snapshot.Snapshots{}
	w.plan = w.steps()
	for w.at = range w.plan {
		if w.plan[w.at].asks() {
			w.plan[w.at].read()
		}
	}
	return w.res
}

// readVolumes lists the backup volumes of the storages read through this
// node.
func (w *worker) readVolumes() {
	for _, st := range w.work.storages {
		var vols []volume
		q := url.Values{"content": {"backup"}}
		if w.get([]string{"nodes", w.work.name, "storage", st.Storage, "content"}, q, func(d []byte) (err error) {
			vols, err = decodeList[volume](d)
			return err
		}) {
			w.res.volumes[st.id()] = vols
		}
	}
}

// readGuests reads each guest's config and snapshots.
func (w *worker) readGuests() {
	w.eachGuest(w.work.guests, func(gw *worker, g clusterResource) {
		cfg, at := gw.readConfig(g)
		if cfg != nil {
			gw.res.configs[vmid(g)] = cfg
		}
		if sn := gw.readSnapshots(g, cfg, at); sn != nil {
			gw.res.snapshots[vmid(g)] = sn
		}
	})
}

// eachGuest runs read for each guest, up to source.proxmox.node_overlap
// at once, each on a worker of its own. The results are merged in the
// guests' order: nothing depends on which answer came first.
func (w *worker) eachGuest(guests []clusterResource, read func(*worker, clusterResource)) {
	parts := make([]*worker, len(guests))
	lanes := len(guests)
	//mutate:node-overlap-bounded ./snapshot/proxmox ^TestPaceNodeOverlap$
	if lanes > w.s.opts.NodeOverlap {
		lanes = w.s.opts.NodeOverlap
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range lanes {
		wg.Go(func() {
			for i := range next {
				read(parts[i], guests[i])
			}
		})
	}
	for i := range guests {
		if w.stopped() {
			break
		}
		parts[i] = &worker{s: w.s, sess: w.sess, ctx: w.ctx, work: w.work, halt: w.halt, plan: w.plan, at: w.at,
			res: nodeResult{configs: map[int64]guestConfig{}, snapshots: map[int64]*snapshot.Snapshots{}, addresses: map[int64][]string{},
				changes: w.res.changes}}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, gw := range parts {
		if gw == nil {
			continue
		}
		maps.Copy(w.res.configs, gw.res.configs)
		maps.Copy(w.res.snapshots, gw.res.snapshots)
		maps.Copy(w.res.addresses, gw.res.addresses)
		w.res.agentDenied = w.res.agentDenied || gw.res.agentDenied
		// After the first guest whose read found the node gone, the
		// others' failures say the same: one problem tells it.
		if !w.down {
			w.res.problems = append(w.res.problems, gw.res.problems...)
		}
		w.down = w.down || gw.down
	}
}

// agentAsked: the guest agent is asked of running VMs only.
func agentAsked(g clusterResource) bool { return g.Type == "qemu" && g.Status == "running" }

// readAgents asks the running VMs' agents for addresses: those whose
// config enables the agent, or could not be read.
func (w *worker) readAgents() {
	asked := slices.DeleteFunc(slices.Clone(w.work.guests), func(g clusterResource) bool {
		if !agentAsked(g) {
			return true
		}
		cfg, read := w.res.configs[vmid(g)]
		//mutate:agent-only-where-configured ./snapshot/proxmox ^TestAgentAskedOnlyWhereConfigured$
		if read && !cfg.agentEnabled() {
			return true
		}
		return false
	})
	w.eachGuest(asked, func(gw *worker, g clusterResource) { gw.readAgent(g, w.res.configs[vmid(g)]) })
}

// readStatus reads the node's swap and IO wait.
func (w *worker) readStatus() {
	var st nodeStatus
	if w.get([]string{"nodes", w.work.name, "status"}, nil, func(d []byte) (err error) {
		st, err = decodeOne[nodeStatus](d)
		return err
	}) {
		w.res.status = &st
	}
}

// readReplication reads the replication jobs of the node's guests.
func (w *worker) readReplication() {
	var jobs []replicationJob
	if w.get([]string{"nodes", w.work.name, "replication"}, nil, func(d []byte) (err error) {
		jobs, err = decodeList[replicationJob](d)
		return err
	}) {
		w.res.replication = replicationJobs(jobs)
	}
}

// readCertificates reads the node's certificates: the first to expire.
func (w *worker) readCertificates() {
	var certs []certificateInfo
	if w.get([]string{"nodes", w.work.name, "certificates", "info"}, nil, func(d []byte) (err error) {
		certs, err = decodeList[certificateInfo](d)
		return err
	}) {
		w.res.certificate = firstToExpire(certs)
	}
}

// readUpdates reads the node's pending package updates.
func (w *worker) readUpdates() {
	var list []aptUpdate
	if w.get([]string{"nodes", w.work.name, "apt", "update"}, nil, func(d []byte) (err error) {
		list, err = decodeList[aptUpdate](d)
		return err
	}) {
		w.res.updates = pendingUpdates(list)
	}
}

func (w *worker) readDisks() {
	var disks []disk
	if !w.get([]string{"nodes", w.work.name, "disks", "list"}, nil, func(d []byte) (err error) {
		disks, err = decodeList[disk](d)
		return err
	}) {
		return
	}
	for _, d := range disks {
		if d.DevPath == "" {
			continue
		}
		dr := diskRead{disk: d}
		var sm smart
		if w.get([]string{"nodes", w.work.name, "disks", "smart"}, url.Values{"disk": {d.DevPath}}, func(b []byte) (err error) {
			sm, err = decodeOne[smart](b)
			return err
		}) {
			dr.smart = &sm
		}
		w.res.disks = append(w.res.disks, dr)
	}
}

// readPools reads the node's ZFS pools and the status of each. A pool
// whose status was not read is left out: its state would read as healthy.
func (w *worker) readPools() {
	var pools []zpool
	if !w.get([]string{"nodes", w.work.name, "disks", "zfs"}, nil, func(d []byte) (err error) {
		pools, err = decodeList[zpool](d)
		return err
	}) {
		return
	}
	for _, p := range pools {
		if p.Name == "" {
			continue
		}
		var det zpoolDetail
		if w.get([]string{"nodes", w.work.name, "disks", "zfs", p.Name}, nil, func(b []byte) (err error) {
			det, err = decodeOne[zpoolDetail](b)
			return err
		}) {
			w.res.pools = append(w.res.pools, poolRead{pool: p, detail: &det})
		}
	}
}

func (w *worker) readTasks() {
	var tasks []task
	q := url.Values{"typefilter": {"vzdump"}, "source": {"all"}, "limit": {strconv.Itoa(taskLimit)}}
	if !w.get([]string{"nodes", w.work.name, "tasks"}, q, func(d []byte) (err error) {
		tasks, err = decodeList[task](d)
		return err
	}) {
		return
	}
	w.res.tasksRead = true
	tasks = byNewest(tasks)
	logs := map[string][]logLine{}
	failed := map[string]bool{}
	for _, g := range w.work.guests {
		id := vmid(g)
		if !w.work.tracked[id] {
			continue
		}
		sid := strconv.FormatInt(id, 10)
	walk:
		for _, t := range tasks {
			switch {
			case t.ID == sid:
				w.res.runs[id] = taskRun(t)
				break walk
			case t.ID != "":
				continue
			case running(t) || t.Status == "OK" || strings.HasPrefix(t.Status, "WARNINGS"):
				w.res.runs[id] = taskRun(t)
				break walk
			}
			// A job over several guests that failed: its log says which.
			lines, ok := logs[t.UPID]
			if !ok && !failed[t.UPID] && len(logs)+len(failed) >= logBudget {
				break walk // older than the logs worth reading: status unknown
			}
			if !ok && !failed[t.UPID] {
				ok = w.get([]string{"nodes", w.work.name, "tasks", t.UPID, "log"}, url.Values{"limit": {strconv.Itoa(logLimit)}},
					func(d []byte) (err error) {
						lines, err = decodeList[logLine](d)
						return err
					})
				if ok {
					logs[t.UPID] = lines
				} else {
					failed[t.UPID] = true
				}
			}
			if !ok {
				w.res.runsFailed[id] = true
				break walk
			}
			if r, found := fromLog(lines, id, t); found {
				w.res.runs[id] = r
				break walk
			}
		}
	}
}

// readRecent reads the node's newest tasks of every type, running ones
// included: one request, at most recentLimit tasks.
func (w *worker) readRecent() {
	q := url.Values{"source": {"all"}, "limit": {strconv.Itoa(recentLimit)}}
	var tasks []task
	if w.get([]string{"nodes", w.work.name, "tasks"}, q, func(d []byte) (err error) {
		tasks, err = decodeList[task](d)
		return err
	}) {
		w.res.recent, w.res.recentRead = newestFirst(tasks), true
		w.res.changes = touchedBy(w.res.recent)
	}
}

// readAgent asks the guest agent for addresses, or uses the kept answer
// while nothing says the guest changed. A guest without a running agent
// answers with an error: that is kept as no addresses, not a failure of
// the collection. A refusal (HTTP 403) keeps nothing. A failure to reach
// the node uses the last copy, marked stale in a warning.
func (w *worker) readAgent(g clusterResource, cfg guestConfig) {
	if w.stopped() {
		return
	}
	segments := []string{"nodes", w.work.name, "qemu", strconv.FormatInt(vmid(g), 10), "agent", "network-get-interfaces"}
	c, _ := w.readKept(g, partAgent, segments, func(d []byte) error {
		_, err := decodeOne[agentInterfaces](d)
		return err
	}, w.agentFailed)
	if c == nil || string(c.Data) == "null" {
		return
	}
	ifs, err := decodeOne[agentInterfaces](c.Data)
	if err != nil {
		return
	}
	if addrs := agentAddresses(ifs, cfg.nics(), w.s.opts.GuestAgent.Port); len(addrs) > 0 {
		w.res.addresses[vmid(g)] = addrs
	}
}

// agentFailed takes a failed agent read (a keptFailure): a refusal (HTTP
// 403) keeps nothing and is a coverage gap of the source; another error
// answer says the agent is not running, kept as null: no addresses.
func (w *worker) agentFailed(err error) ([]byte, bool) {
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		w.res.agentDenied = true
		return nil, true
	case errors.As(err, &ae) && !errors.Is(err, ErrNodeUnreachable):
		return []byte("null"), true
	}
	return nil, false
}
