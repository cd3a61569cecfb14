package proxmox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// SourceProblemID is the Problem.ID of a failure that concerns the cluster
// rather than one node (GET /cluster/backup, a configured storage that does
// not exist). Node failures carry the node's id, "node/<node>".
const SourceProblemID = "(source)"

// Collect reads the cluster now.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	now := s.opts.Now().UTC().Truncate(time.Second)
	sess, err := s.client.session()
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	var rs []clusterResource
	if err := sess.get(ctx, []string{"cluster", "resources"}, nil, func(d []byte) (err error) {
		rs, err = decodeList[clusterResource](d)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	cl, err := indexCluster(rs)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: GET /cluster/resources: %w", err)
	}
	if len(cl.nodes) == 0 {
		return nil, nil, fmt.Errorf("collect: GET /cluster/resources lists no node the API token %q may see; grant it the PVEAuditor role on /", s.opts.TokenID)
	}
	var problems []snapshot.Problem
	var jobs []backupJob
	jobsRead := sess.get(ctx, []string{"cluster", "backup"}, nil, func(d []byte) (err error) {
		jobs, err = decodeList[backupJob](d)
		return err
	})
	if jobsRead != nil {
		problems = append(problems, clusterProblem([]string{"cluster", "backup"}, jobsRead, "backups of every guest left out"))
	}
	notBacked, nbProblem := readNotBackedUp(ctx, sess, jobsRead == nil && hasVzdump(jobs))
	if nbProblem != nil {
		problems = append(problems, *nbProblem)
	}
	if err := sess.get(ctx, []string{"cluster", "status"}, nil, func(d []byte) (err error) {
		cl.status, err = decodeList[clusterStatusEntry](d)
		return err
	}); err != nil {
		cl.status = nil
		problems = append(problems, clusterProblem([]string{"cluster", "status"}, err, "the cluster and its quorum left out"))
	}
	if err := sess.get(ctx, []string{"cluster", "ha", "status", "current"}, nil, func(d []byte) error {
		entries, err := decodeList[haStatusEntry](d)
		if err == nil {
			cl.ha = indexHA(entries)
		}
		return err
	}); err != nil {
		problems = append(problems, clusterProblem([]string{"cluster", "ha", "status", "current"}, err, "the HA state of guests and nodes left out"))
	}
	paths, pathsRead := s.storagePaths(ctx, sess)
	if pathsRead != nil {
		problems = append(problems, *pathsRead)
	}
	backups := cl.backupStorages(s.opts.Backups.Storages)
	problems = append(problems, cl.problems...)

	var work []nodeWork
	for _, wk := range s.plan(cl, backups, jobs) {
		if cl.online(wk.name) {
			work = append(work, wk)
			continue
		}
		// What an offline node skips is what its worker would have read.
		w := &worker{s: s, work: wk}
		w.plan = w.steps()
		problems = append(problems, snapshot.Problem{ID: "node/" + wk.name, Index: -1, Field: "node/" + wk.name,
			Problem: fmt.Sprintf("%s in /cluster/resources: its %s were not read", nodeStatusWord(cl.nodes[wk.name].Status), w.skipped(0))})
	}
	results := s.nodes(ctx, sess, work)
	byNode := map[string]*nodeResult{}
	denied := false
	for i := range results {
		byNode[work[i].name] = &results[i]
		problems = append(problems, results[i].problems...)
		denied = denied || results[i].agentDenied
	}
	problems = append(problems, s.saveKept(ctx, cl.guests)...)
	if denied {
		agent, _ := endpointOfFamily("guest_agent")
		problems = append(problems, snapshot.Problem{ID: SourceProblemID, Index: 0, Field: "guest_agent", Warning: true,
			Problem: "the API token may not query guest agents (HTTP 403): grant VM.Monitor (PVE 8) or VM.GuestAgent.Audit (PVE 9) for guest addresses, or set source.proxmox.guest_agent.enabled: false",
			Gap:     &snapshot.Gap{Check: agent.family, Keys: agent.keys, Endpoint: "GET " + agent.path, Privilege: agent.privilege, Status: http.StatusForbidden}})
	}
	//mutate:coverage-hidden-guests ./snapshot/proxmox ^TestCoverageHiddenGuests
	if p := guestsHidden(rs, cl.ha, jobs, results); p != nil {
		problems = append(problems, *p)
	}
	snap := &snapshot.Snapshot{Version: snapshot.Version, TakenAt: now, Source: DefaultSourceName,
		Resources: s.build(cl, paths, backups, jobs, jobsRead == nil, notBacked, byNode)}
	// Round-trip through the codec so these resources pass the same
	// validation as any other snapshot document.
	data, err := snapshot.Encode(snap)
	if err != nil {
		return nil, nil, fmt.Errorf("collect: encode: %w", err)
	}
	out, invalid, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	return out, append(invalid, problems...), nil
}

// readNotBackedUp reads PVE's own list of guests in no backup job, when
// there are vzdump jobs (want). nil means it was not read: an older PVE
// (HTTP 501) or a failed read, and the jobs' selection decides; a failure
// other than 501 is a warning.
func readNotBackedUp(ctx context.Context, sess *session, want bool) (map[int64]bool, *snapshot.Problem) {
	if !want {
		return nil, nil
	}
	segments := []string{"cluster", "backup-info", "not-backed-up"}
	var list []notBackedUp
	err := sess.get(ctx, segments, nil, func(d []byte) (err error) {
		list, err = decodeList[notBackedUp](d)
		return err
	})
	var ae *APIError
	switch {
	case err == nil:
		out := make(map[int64]bool, len(list))
		for _, e := range list {
			if e.VMID.set {
				out[int64(e.VMID.v)] = true
			}
		}
		return out, nil
	case errors.As(err, &ae) && ae.Status == http.StatusNotImplemented:
		return nil, nil
	}
	endpoint := endpointOf(segments)
	return nil, &snapshot.Problem{ID: SourceProblemID, Index: 0, Field: endpoint, Warning: true,
		Problem: trimEndpoint(err, endpoint) + "; guests in no backup job are told by the jobs' selection"}
}

// clusterProblem is the problem of a cluster-wide read that failed: what
// it left out, or a coverage gap when it was refused or not served.
func clusterProblem(segments []string, err error, left string) snapshot.Problem {
	endpoint := endpointOf(segments)
	p := snapshot.Problem{ID: SourceProblemID, Index: -1, Field: endpoint, Problem: trimEndpoint(err, endpoint) + "; " + left}
	gapOf(&p, segments, err)
	return p
}

func nodeStatusWord(s string) string {
	if s == "" {
		return "status unknown"
	}
	return s
}

func trimEndpoint(err error, endpoint string) string {
	msg := err.Error()
	if len(msg) > len(endpoint)+2 && msg[:len(endpoint)+2] == endpoint+": " {
		return msg[len(endpoint)+2:]
	}
	return msg
}

// plan assigns the reads to every node (Collect reads the online ones
// and names what the others skip): each node's disks, tasks and
// agents, its local backup storages, and the shared backup storages whose
// representative it is.
func (s *Source) plan(cl *cluster, backups []storageEntry, jobs []backupJob) []nodeWork {
	var work []nodeWork
	index := map[string]int{}
	for _, name := range cl.names {
		index[name] = len(work)
		work = append(work, nodeWork{name: name, tracked: map[int64]bool{}})
	}
	for _, g := range cl.guests {
		if i, ok := index[g.Node]; ok {
			work[i].guests = append(work[i].guests, g)
			work[i].tracked[vmid(g)] = covered(jobs, g)
		}
	}
	for _, st := range backups {
		if i, ok := index[st.Node]; ok {
			work[i].storages = append(work[i].storages, st)
		}
	}
	return work
}

// build maps everything read into resources: nodes, guests, storage, ZFS
// pools, disks.
func (s *Source) build(cl *cluster, paths map[string]string, backups []storageEntry, jobs []backupJob, jobsRead bool, notBacked map[int64]bool,
	byNode map[string]*nodeResult) []snapshot.Resource {
	var out []snapshot.Resource
	// The cluster is the parent of its nodes, and of its guests beside
	// their node: quorum lost holds both (docs/FINDINGS.md#inhibition).
	clusterRes, inCluster := cl.clusterResourceOf()
	if inCluster {
		out = append(out, clusterRes)
	}
	for _, name := range cl.names {
		var st *nodeStatus
		if res := byNode[name]; res != nil {
			st = res.status
		}
		n := nodeResource(cl.nodes[name], st)
		if res := byNode[name]; res != nil {
			n.Certificate = res.certificate
			n.Updates = res.updates
		}
		if inCluster {
			n.Parent = clusterRes.ID
		}
		if cl.ha != nil {
			h := cl.ha.lrms[name]
			n.HA = &h
		}
		out = append(out, n)
	}
	newest := map[int64]newestBackup{}
	read := map[string]bool{}
	for _, res := range byNode {
		for id, vols := range res.volumes {
			read[id] = true
			newestVolumes(vols, id, newest)
		}
	}
	groups := oneFilesystem(cl.storages, paths)
	where := storageIDs(groups)
	for _, g := range cl.guests {
		res := byNode[g.Node]
		r := guestResource(g, res != nil)
		var recent []task
		var recentRead bool
		var cfg guestConfig
		if res != nil {
			r.Addresses = res.addresses[vmid(g)]
			r.Parents = where.of(g.Node, res.configs[vmid(g)].storages())
			recent, recentRead, cfg = res.recent, res.recentRead, res.configs[vmid(g)]
		}
		r.Guest = guestTasks(g, recent, recentRead, cfg)
		if res != nil && res.snapshots[vmid(g)] != nil {
			if r.Guest == nil {
				r.Guest = &snapshot.GuestState{}
			}
			r.Guest.Snapshots = res.snapshots[vmid(g)]
		}
		if jobsRead && hasVzdump(jobs) {
			if r.Guest == nil {
				r.Guest = &snapshot.GuestState{}
			}
			sched := covered(jobs, g)
			//mutate:not-backed-up ./cmd/patrold ^TestRunBackupUnscheduledByPVE$
			if notBacked != nil {
				sched = !notBacked[vmid(g)]
			}
			r.Guest.BackupScheduled = &sched
		}
		if inCluster {
			r.Parents = append(r.Parents, clusterRes.ID)
		}
		if cl.ha != nil {
			h := cl.ha.services[r.ID]
			r.HA = &h
		}
		if res != nil && res.replication != nil {
			r.Replication = &snapshot.Replication{Jobs: res.replication[vmid(g)]}
			if r.Replication.Jobs == nil {
				r.Replication.Jobs = []snapshot.ReplicationJob{}
			}
		}
		if jobsRead && covered(jobs, g) && backupsComplete(g, res, backups, read) {
			run, ok := res.runs[vmid(g)]
			r.Backup = backupOf(run, ok, newest[vmid(g)])
		}
		out = append(out, r)
	}
	for _, group := range groups {
		out = append(out, groupResource(group))
	}
	var pools, disks []snapshot.Resource
	for _, name := range cl.names {
		if res := byNode[name]; res != nil {
			for _, p := range res.pools {
				pools = append(pools, poolResource(name, p))
			}
			for _, d := range res.disks {
				disks = append(disks, diskResource(name, d))
			}
		}
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].ID < pools[j].ID })
	out = append(out, pools...)
	sort.Slice(disks, func(i, j int) bool { return disks[i].ID < disks[j].ID })
	return append(out, disks...)
}

// storageIndex maps a storage a guest names to the resource it is
// reported through: a node-local storage by node and name, a shared one
// by name (docs/SOURCES.md#topology).
type storageIndex map[string]string

// storageIDs indexes the resources of groups (each reported through its
// first storage).
func storageIDs(groups [][]storageEntry) storageIndex {
	out := storageIndex{}
	for _, group := range groups {
		for _, st := range group {
			if st.shared {
				out["\x00"+st.Storage] = group[0].id()
			} else {
				out[st.Node+"\x00"+st.Storage] = group[0].id()
			}
		}
	}
	return out
}

// of is the ids of the storage resources a guest on node with volumes on
// names has as parents, sorted, at most snapshot.MaxParents; a storage
// the cluster does not report is left out.
func (x storageIndex) of(node string, names []string) []string {
	var out []string
	for _, n := range names {
		id, ok := x[node+"\x00"+n]
		if !ok {
			id, ok = x["\x00"+n]
		}
		if ok && !slices.Contains(out, id) && len(out) < snapshot.MaxParents {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// groupResource is the resource of one filesystem's storages: named after
// the first by name, listing all in labels.storages, with the highest
// usage any of them reports (their figures are read at slightly different
// moments).
func groupResource(group []storageEntry) snapshot.Resource {
	r := storageResource(group[0])
	if len(group) == 1 {
		return r
	}
	names := make([]string, len(group))
	for i, st := range group {
		names[i] = st.Storage
		if u, ok := percent(st.Disk.v, st.MaxDisk.v); ok && r.Status == snapshot.StatusOnline {
			if cur, _ := r.Metrics.Get(snapshot.MetricUsage); u > cur {
				setPercent(&r.Metrics, snapshot.MetricUsage, st.Disk.v, st.MaxDisk.v)
			}
		}
	}
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	r.Labels[snapshot.LabelStorages] = strings.Join(names, ",")
	return r
}

// storagePaths reads GET /storage into the directory storages' paths. A
// failed read is a warning and gives the paths of the last read, if any.
func (s *Source) storagePaths(ctx context.Context, sess *session) (map[string]string, *snapshot.Problem) {
	var configs []storageConfig
	err := sess.get(ctx, []string{"storage"}, nil, func(d []byte) (err error) {
		configs, err = decodeList[storageConfig](d)
		return err
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.paths = storagePaths(configs)
		return s.paths, nil
	}
	p := snapshot.Problem{ID: SourceProblemID, Index: 0, Field: "GET /storage", Warning: true,
		Problem: trimEndpoint(err, "GET /storage") + "; storages on one filesystem are told by equal usage only"}
	if s.paths != nil {
		p.Problem = trimEndpoint(err, "GET /storage") + "; the storage paths of the last read are used"
	}
	return s.paths, &p
}

// storagePaths maps each directory storage of GET /storage to its cleaned
// path. Only dir and btrfs storages count: a network storage's path is a
// mount point whose filesystem is not the node's.
func storagePaths(configs []storageConfig) map[string]string {
	out := map[string]string{}
	for _, c := range configs {
		if (c.Type == "dir" || c.Type == "btrfs") && c.Storage != "" && path.IsAbs(c.Path) {
			out[c.Storage] = path.Clean(c.Path)
		}
	}
	return out
}

// totalSlack is how far apart the total bytes of two storages on nested
// paths may be and still be one filesystem. Two reads of one filesystem
// differ only by a resize between them; a filesystem mounted below
// another is almost never within 2 % of its size.
const totalSlack = 0.02

// oneFilesystem groups the storages that are one filesystem: node-local
// storages of one node, available, that
//   - have the same path in GET /storage (paths), or
//   - have nested paths (/var/lib/vz and /var/lib/vz/snippets, / and
//     /var/lib/vz) and totals within totalSlack, or
//   - report the same used and total bytes (paths unknown, or two
//     directories of one filesystem side by side).
//
// Grouping is transitive. Each group is reported once, through its first
// storage by name, so one full root filesystem is one high_disk, not
// three. Every other storage is a group of its own. Groups are in the
// order of their first storage.
func oneFilesystem(sts []storageEntry, paths map[string]string) [][]storageEntry {
	eligible := func(st storageEntry) bool {
		return !st.shared && st.Status == "available" && st.Disk.set && st.MaxDisk.set && st.Disk.v > 0 && st.MaxDisk.v > 0
	}
	parent := make([]int, len(sts))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i, a := range sts {
		for j := i + 1; j < len(sts); j++ {
			if b := sts[j]; eligible(a) && eligible(b) && a.Node == b.Node && sameFilesystem(a, b, paths) {
				parent[find(j)] = find(i)
			}
		}
	}
	var out [][]storageEntry
	at := map[int]int{} // root -> its group in out
	for i, st := range sts {
		r := find(i)
		if g, ok := at[r]; ok {
			out[g] = append(out[g], st)
			continue
		}
		at[r] = len(out)
		out = append(out, []storageEntry{st})
	}
	for _, g := range out {
		sort.SliceStable(g, func(i, j int) bool { return g[i].Storage < g[j].Storage })
	}
	return out
}

// sameFilesystem reports whether two eligible storages of one node are
// one filesystem (see oneFilesystem).
func sameFilesystem(a, b storageEntry, paths map[string]string) bool {
	if a.Disk.v == b.Disk.v && a.MaxDisk.v == b.MaxDisk.v {
		return true
	}
	pa, okA := paths[a.Storage]
	pb, okB := paths[b.Storage]
	switch {
	case !okA || !okB:
		return false
	case pa == pb:
		return true
	case nested(pa, pb) || nested(pb, pa):
		return math.Abs(a.MaxDisk.v-b.MaxDisk.v) <= totalSlack*math.Max(a.MaxDisk.v, b.MaxDisk.v)
	}
	return false
}

// nested reports whether path p is below dir (both clean and absolute).
func nested(dir, p string) bool {
	return dir == "/" || strings.HasPrefix(p, dir+"/")
}

// backupsComplete reports whether everything a guest's backup state rests
// on was read: its node's vzdump tasks (and any log they needed), every
// shared backup storage, and the backup storages local to its node. A
// half-read state would report a backup as missing that is not.
func backupsComplete(g clusterResource, res *nodeResult, backups []storageEntry, read map[string]bool) bool {
	if res == nil || !res.tasksRead || res.runsFailed[vmid(g)] {
		return false
	}
	for _, st := range backups {
		if (st.shared || st.Node == g.Node) && !read[st.id()] {
			return false
		}
	}
	return true
}
