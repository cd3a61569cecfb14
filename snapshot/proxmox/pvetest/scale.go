package pvetest

import (
	"cmp"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Guest is one guest of a Scale fleet. Tests change it with Scale.Guest.
type Guest struct {
	VMID   int
	Type   string // qemu or lxc
	Node   string
	Status string // running or stopped
	Lock   string // "" when unlocked
	Uptime int64  // seconds; 0 when stopped
	// Rev is the config's revision: a change makes a new config digest.
	Rev int
	// SnapshotAt is when the guest's one snapshot was taken (Unix
	// seconds); 0 for none.
	SnapshotAt int64
}

// Scale is a stand-in for a whole PVE 8 cluster: nodes pve1..pveN, each
// with its guests (half VMs, half containers, all running and backed up
// by one job to a shared PBS storage), two disks, no ZFS pool. Every
// request waits Latency before it is answered, as a loaded pveproxy does.
// It counts requests by path and keeps each node's request times.
type Scale struct {
	*httptest.Server
	Latency time.Duration
	// BackupAt is when every guest's last backup ran (Unix seconds):
	// 2026-11-19 21:05 UTC unless a test sets it before the first request.
	BackupAt int64

	mu     sync.Mutex
	nodes  []string
	guests []*Guest
	byPath map[string]int
	times  map[string][]time.Time // node -> when its requests arrived
	flight map[string]int         // node -> its requests being answered
	peak   map[string]int         // node -> most of its requests answered at once
	fail   map[string]int         // path -> HTTP status to answer
	slow   map[string]time.Duration
	open   map[string]bool // connections seen, by remote address
	tasks  []Task          // tasks added by AddTask
}

// Task is one task of a node's task list.
type Task struct {
	Node       string
	Type       string
	VMID       int
	Start, End int64 // Unix seconds
}

// json is the task as PVE lists it.
func (t Task) json() string {
	return fmt.Sprintf(`{"upid":"UPID:%s:000%d:%s:%d:root@pam:","node":%q,"type":%q,"id":"%d","user":"root@pam","starttime":%d,"endtime":%d,"status":"OK"}`,
		t.Node, t.VMID, t.Type, t.VMID, t.Node, t.Type, t.VMID, t.Start, t.End)
}

// NewScale starts a stand-in of nodes x guests (guests per node) that
// answers after latency.
func NewScale(t testing.TB, nodes, guests int, latency time.Duration) *Scale {
	t.Helper()
	s := &Scale{Latency: latency, BackupAt: 1795917900, byPath: map[string]int{}, times: map[string][]time.Time{}, flight: map[string]int{}, peak: map[string]int{}, fail: map[string]int{}, slow: map[string]time.Duration{}, open: map[string]bool{}}
	for n := range nodes {
		node := "pve" + strconv.Itoa(n+1)
		s.nodes = append(s.nodes, node)
		for g := range guests {
			typ := "qemu"
			if g%2 == 1 {
				typ = "lxc"
			}
			s.guests = append(s.guests, &Guest{VMID: 100 + n*guests + g, Type: typ, Node: node, Status: "running", Uptime: 86400})
		}
	}
	s.Server = httptest.NewUnstartedServer(s)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.open[c.RemoteAddr().String()] = true
			s.mu.Unlock()
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// Guest changes the guest vmid under the lock; false when there is none.
func (s *Scale) Guest(vmid int, change func(*Guest)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.guests {
		if g.VMID == vmid {
			change(g)
			return true
		}
	}
	return false
}

// Add adds a guest to the fleet.
func (s *Scale) Add(g Guest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guests = append(s.guests, &g)
}

// AddTask lists a finished task of type typ for the guest vmid in node's
// tasks, started at start and ended a minute later (Unix seconds).
func (s *Scale) AddTask(node string, vmid int, typ string, start int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append(s.tasks, Task{Node: node, Type: typ, VMID: vmid, Start: start, End: start + 60})
}

// Fail answers path (as "nodes/pve1/qemu/100/config") with status and
// PVE's message; status 0 answers it again.
func (s *Scale) Fail(path string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.fail, path)
		return
	}
	s.fail[path] = status
}

// Slow answers path after d instead of Latency; 0 answers it as the
// others again.
func (s *Scale) Slow(path string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d == 0 {
		delete(s.slow, path)
		return
	}
	s.slow[path] = d
}

// Requests is how many requests were answered since the last Reset.
func (s *Scale) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.byPath {
		n += c
	}
	return n
}

// ByPath is the requests since the last Reset by path.
func (s *Scale) ByPath() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.byPath))
	for p, c := range s.byPath {
		out[p] = c
	}
	return out
}

// NodeTimes is when node's requests (paths under /nodes/<node>/) arrived
// since the last Reset, in order.
func (s *Scale) NodeTimes(node string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times[node])
}

// Peak is the most requests of node (paths under /nodes/<node>/) that
// were being answered at once since the last Reset.
func (s *Scale) Peak(node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak[node]
}

// Connections is how many connections clients opened since the start.
func (s *Scale) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Reset clears the request counters and times.
func (s *Scale) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byPath, s.times, s.peak = map[string]int{}, map[string][]time.Time{}, map[string]int{}
}

// Source is a source section of patrold's configuration (YAML) pointing
// at the stand-in, pinned by its certificate's fingerprint, with the
// secret in a file under dir. The guest agent is not asked: the prober
// would connect to the made-up addresses.
func (s *Scale) Source(t testing.TB, dir string) string {
	t.Helper()
	secret := filepath.Join(dir, "pve.token")
	if err := os.WriteFile(secret, []byte(Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(s.Certificate().Raw)
	return "source:\n  kind: proxmox\n  proxmox:\n    url: " + s.URL + "\n    token_id: " + TokenID + "\n" +
		"    token_secret_file: " + secret + "\n    tls: {fingerprint: " + hex.EncodeToString(sum[:]) + "}\n" +
		"    guest_agent: {enabled: false}\n    rate: 1000\n"
}

func (s *Scale) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := admit(w, r)
	if !ok {
		return
	}
	now := time.Now()
	node := ""
	if seg := strings.Split(p, "/"); len(seg) > 1 && seg[0] == "nodes" {
		node = seg[1]
	}
	s.mu.Lock()
	s.byPath[p]++
	if node != "" {
		s.times[node] = append(s.times[node], now)
		s.flight[node]++
		s.peak[node] = max(s.peak[node], s.flight[node])
	}
	status := s.fail[p]
	latency, slow := s.slow[p]
	if !slow {
		latency = s.Latency
	}
	data, ok := s.answer(p, r.URL.Query())
	s.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency) // the server's own time to answer, not a wait of a test
	}
	if node != "" {
		// The count drops as the handler returns, before the answer is
		// flushed: a client's next request never overlaps its last.
		defer func() {
			s.mu.Lock()
			s.flight[node]--
			s.mu.Unlock()
		}()
	}
	switch {
	case status != 0:
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"data":null,"message":"` + http.StatusText(status) + `\n"}`))
	case !ok:
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = w.Write([]byte(`{"data":null,"message":"Method 'GET /` + p + `' not implemented\n"}`))
	default:
		_, _ = w.Write([]byte(`{"data":` + data + `}`))
	}
}

// answer is the data of path now, as PVE 8 shapes it; false for a path
// PVE would not serve here. A node's tasks are listed newest first, as
// many as q's limit, of q's typefilter when set. s.mu is held.
func (s *Scale) answer(p string, q url.Values) (string, bool) {
	seg := strings.Split(p, "/")
	switch p {
	case "cluster/resources":
		return s.resources(), true
	case "cluster/status":
		online := map[string]bool{}
		for _, n := range s.nodes {
			online[n] = true
		}
		return ClusterStatus("scale", true, online), true
	case "cluster/ha/status/current":
		return HAStatus(nil, nil), true
	case "cluster/backup":
		return `[{"id":"backup-1","type":"vzdump","enabled":1,"all":1,"storage":"pbs","schedule":"21:00"}]`, true
	case "storage":
		return `[{"storage":"local-lvm","type":"lvmthin","content":"images,rootdir","thinpool":"data","vgname":"pve"},` +
			`{"storage":"pbs","type":"pbs","content":"backup","server":"192.0.2.50","datastore":"main","shared":1}]`, true
	}
	if len(seg) < 3 || seg[0] != "nodes" || !slices.Contains(s.nodes, seg[1]) {
		return "", false
	}
	node := seg[1]
	switch rest := strings.Join(seg[2:], "/"); rest {
	case "status":
		return NodeStatus(0.05, 0.001, 0, 8589934592), true
	case "replication", "disks/zfs", "apt/update":
		return `[]`, true
	case "certificates/info":
		return Certificates(1893456000, 1893456000), true
	case "disks/list":
		return `[{"devpath":"/dev/sda","type":"ssd","health":"PASSED","wearout":97,"model":"SAMSUNG MZ7LH960","serial":"S1` + node + `","size":960197124096,"used":"LVM"},` +
			`{"devpath":"/dev/sdb","type":"hdd","health":"PASSED","wearout":"N/A","model":"ST4000NM","serial":"Z2` + node + `","size":4000787030016,"used":"LVM"}]`, true
	case "disks/smart":
		return `{"health":"PASSED","type":"ata","attributes":[{"id":"  5","name":"Reallocated_Sector_Ct","raw":"0"},{"id":"197","name":"Current_Pending_Sector","raw":"0"},{"id":"194","name":"Temperature_Celsius","raw":"35"}]}`, true
	case "tasks":
		var tasks []Task
		for _, g := range s.guests {
			if g.Node == node {
				tasks = append(tasks, Task{Node: node, Type: "vzdump", VMID: g.VMID, Start: s.BackupAt - 300, End: s.BackupAt + 900})
			}
		}
		for _, t := range s.tasks {
			if t.Node == node {
				tasks = append(tasks, t)
			}
		}
		tasks = slices.DeleteFunc(tasks, func(t Task) bool { return q.Get("typefilter") != "" && t.Type != q.Get("typefilter") })
		slices.SortStableFunc(tasks, func(a, b Task) int { return cmp.Compare(b.Start, a.Start) })
		if n, err := strconv.Atoi(q.Get("limit")); err == nil && n < len(tasks) {
			tasks = tasks[:n]
		}
		out := make([]string, len(tasks))
		for i, t := range tasks {
			out[i] = t.json()
		}
		return "[" + strings.Join(out, ",") + "]", true
	case "storage/pbs/content":
		var vols []string
		for _, g := range s.guests {
			kind := map[string]string{"qemu": "vm", "lxc": "ct"}[g.Type]
			vols = append(vols, fmt.Sprintf(`{"volid":"pbs:backup/%s/%d/%s","format":"pbs-%s","content":"backup","ctime":%d,"vmid":%d,"size":1073741824}`,
				kind, g.VMID, time.Unix(s.BackupAt, 0).UTC().Format("2006-01-02T15:04:05Z"), kind, s.BackupAt, g.VMID))
		}
		return "[" + strings.Join(vols, ",") + "]", true
	}
	if len(seg) < 5 {
		return "", false
	}
	id, err := strconv.Atoi(seg[3])
	if err != nil {
		return "", false
	}
	var g *Guest
	for _, c := range s.guests {
		if c.VMID == id && c.Node == node && c.Type == seg[2] {
			g = c
		}
	}
	if g == nil {
		return "", false
	}
	mac := fmt.Sprintf("bc:24:11:%02x:%02x:%02x", id/65536%256, id/256%256, id%256)
	switch strings.Join(seg[4:], "/") {
	case "config":
		return s.config(g, mac), true
	case "snapshot":
		current := `{"name":"current","description":"You are here!","running":1,"digest":"` + digest(g) + `"}`
		if g.SnapshotAt == 0 {
			return "[" + current + "]", true
		}
		return `[{"name":"before-upgrade","description":"","snaptime":` + strconv.FormatInt(g.SnapshotAt, 10) + `,"vmstate":0},` +
			strings.Replace(current, `{"name":"current",`, `{"name":"current","parent":"before-upgrade",`, 1) + "]", true
	case "agent/network-get-interfaces":
		if g.Type != "qemu" || g.Status != "running" {
			return "", false
		}
		return fmt.Sprintf(`{"result":[{"name":"lo","hardware-address":"00:00:00:00:00:00","ip-addresses":[{"ip-address-type":"ipv4","ip-address":"127.0.0.1","prefix":8}]},`+
			`{"name":"eth0","hardware-address":%q,"ip-addresses":[{"ip-address-type":"ipv4","ip-address":"10.%d.%d.%d","prefix":16}]}]}`, mac, id/65536%256, id/256%256, id%256), true
	}
	return "", false
}

// resources is GET /cluster/resources: nodes, each node's two storages,
// and the guests.
func (s *Scale) resources() string {
	var out []string
	for _, node := range s.nodes {
		out = append(out, fmt.Sprintf(`{"id":"node/%s","type":"node","node":%q,"status":"online","cpu":0.3,"maxcpu":32,"mem":100000000000,"maxmem":250000000000,"uptime":864000,"level":""}`, node, node),
			fmt.Sprintf(`{"id":"storage/%s/local-lvm","type":"storage","storage":"local-lvm","node":%q,"status":"available","disk":400000000000,"maxdisk":1000000000000,"content":"images,rootdir","plugintype":"lvmthin","shared":0}`, node, node),
			fmt.Sprintf(`{"id":"storage/%s/pbs","type":"storage","storage":"pbs","node":%q,"status":"available","disk":4000000000000,"maxdisk":10000000000000,"content":"backup","plugintype":"pbs","shared":1}`, node, node))
	}
	for _, g := range s.guests {
		cpu, mem := "0.1", "2000000000"
		if g.Status != "running" {
			cpu, mem = "0", "0"
		}
		lock := ""
		if g.Lock != "" {
			lock = `,"lock":"` + g.Lock + `"`
		}
		out = append(out, fmt.Sprintf(`{"id":"%s/%d","type":%q,"vmid":%d,"name":"g%d","node":%q,"status":%q,"cpu":%s,"maxcpu":4,"mem":%s,"maxmem":8000000000,"disk":1000000000,"maxdisk":32000000000,"uptime":%d,"template":0,"tags":"prod;app"%s}`,
			g.Type, g.VMID, g.Type, g.VMID, g.VMID, g.Node, g.Status, cpu, mem, g.Uptime, lock))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// config is a guest's GET .../config: its CPU, memory, one NIC and one
// disk on local-lvm, the parent snapshot PVE names while the guest has
// one, and the digest PVE adds.
func (s *Scale) config(g *Guest, mac string) string {
	parent := ""
	if g.SnapshotAt != 0 {
		parent = `"parent":"before-upgrade",`
	}
	if g.Type == "lxc" {
		return fmt.Sprintf(`{"arch":"amd64","cores":2,"hostname":"g%d","memory":2048,"net0":"name=eth0,bridge=vmbr0,hwaddr=%s,ip=dhcp,type=veth","ostype":"debian",%s"rootfs":"local-lvm:vm-%d-disk-0,size=8G","swap":512,"digest":%q}`,
			g.VMID, strings.ToUpper(mac), parent, g.VMID, digest(g))
	}
	return fmt.Sprintf(`{"boot":"order=scsi0","cores":4,"memory":"8192","name":"g%d","net0":"virtio=%s,bridge=vmbr0","ostype":"l26",%s"scsi0":"local-lvm:vm-%d-disk-0,size=32G","scsihw":"virtio-scsi-single","agent":"1","digest":%q}`,
		g.VMID, strings.ToUpper(mac), parent, g.VMID, digest(g))
}

// digest is the config's SHA-1 as PVE reports it, here of the guest's
// identity, revision and snapshot (taking one writes the config).
func digest(g *Guest) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%d/%d/%d", g.Type, g.VMID, g.Rev, g.SnapshotAt)))
	return hex.EncodeToString(sum[:])
}
