// Package pvetest is a loopback HTTPS stand-in for the Proxmox VE 8 API,
// for tests that run patrold (the CLI, a daemon) against a cluster.
// It answers GET requests with an API token, from bodies a test sets per
// path, as PVE does: {"data": ...}. A path no test set answers 501, as PVE
// does for a path it does not serve, and is recorded (Unexpected).
package pvetest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Credentials the stand-in accepts. The secret is made up.
const (
	TokenID = "patrold@pve!patrol"
	Secret  = "0b7e4c1a-6f2d-4b8e-9c3a-5d1e7f2a9b40"
)

// Answer is one canned response.
type Answer struct {
	Status int    // 0: 200
	Body   string // the whole body, {"data": ...}
}

// Server is the stand-in. Set, Fail and Clear may be called while it
// serves.
type Server struct {
	*httptest.Server
	mu         sync.Mutex
	answers    map[string]Answer
	unexpected []string
}

// New starts a stand-in for a one-node cluster: node pve1 online, with
// no guests, storages, disks, pools, tasks or backup jobs, and an
// unremarkable status. Tests change what they need with Set.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{answers: map[string]Answer{}}
	s.Server = httptest.NewUnstartedServer(s)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	s.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368}]`)
	s.Set("cluster/status", `[{"type":"node","id":"node/pve1","name":"pve1","nodeid":0,"online":1,"local":1,"ip":"192.0.2.11","level":""}]`)
	s.Set("cluster/ha/status/current", HAStatus(nil, nil))
	// As PVE before 7.2 answers: the jobs' selection decides.
	s.Fail("cluster/backup-info/not-backed-up", 501, "Method 'GET /cluster/backup-info/not-backed-up' not implemented")
	for _, p := range []string{"cluster/backup", "storage", "nodes/pve1/disks/list", "nodes/pve1/disks/zfs", "nodes/pve1/tasks", "nodes/pve1/replication",
		"nodes/pve1/apt/update"} {
		s.Set(p, `[]`)
	}
	s.Set("nodes/pve1/certificates/info", Certificates(1893456000, 1893456000))
	s.Set("nodes/pve1/status", NodeStatus(0.05, 0.001, 0, 8589934592))
	return s
}

// NodeStatus is a PVE 8 GET /nodes/{node}/status answer's data.
func NodeStatus(cpu, wait float64, swapUsed, swapTotal int64) string {
	return `{"cpu":` + num(cpu) + `,"wait":` + num(wait) + `,"uptime":86400,"loadavg":["0.10","0.20","0.30"],` +
		`"memory":{"total":34359738368,"used":4294967296,"free":30064771072},` +
		`"swap":{"total":` + inum(swapTotal) + `,"used":` + inum(swapUsed) + `,"free":` + inum(swapTotal-swapUsed) + `},` +
		`"cpuinfo":{"cpus":8,"sockets":1,"cores":8,"model":"QEMU Virtual CPU"},"pveversion":"pve-manager/8.3.0/c1689ccb1065a83b"}`
}

// ClusterStatus is a GET /cluster/status answer's data for cluster name
// with these nodes, each online or not, quorate or not.
func ClusterStatus(name string, quorate bool, online map[string]bool) string {
	q := "0"
	if quorate {
		q = "1"
	}
	var nodes []string
	for n := range online {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	out := `[{"type":"cluster","id":"cluster","name":"` + name + `","nodes":` + strconv.Itoa(len(nodes)) + `,"quorate":` + q + `,"version":4}`
	for i, n := range nodes {
		on := "0"
		if online[n] {
			on = "1"
		}
		out += `,{"type":"node","id":"node/` + n + `","name":"` + n + `","nodeid":` + strconv.Itoa(i+1) + `,"online":` + on + `,"local":0,"ip":"192.0.2.` + strconv.Itoa(11+i) + `","level":""}`
	}
	return out + "]"
}

// HAStatus is a GET /cluster/ha/status/current answer's data: the
// quorum, a master when there are LRMs, each node's LRM in its status
// text ("active", "idle", "maintenance mode", "old timestamp - dead?"),
// and each service by sid ("vm:100") in its state, requested started.
func HAStatus(lrms, services map[string]string) string {
	out := `[{"id":"quorum","node":"pve1","quorate":1,"status":"OK","type":"quorum"}`
	const when = `, Sun Nov 29 10:00:00 2026`
	if len(lrms) > 0 {
		out += `,{"id":"master","node":"pve1","status":"pve1 (active` + when + `)","timestamp":1796032800,"type":"master"}`
	}
	for _, n := range sortedKeys(lrms) {
		out += `,{"id":"lrm:` + n + `","node":"` + n + `","status":"` + n + ` (` + lrms[n] + when + `)","timestamp":1796032800,"type":"lrm"}`
	}
	for _, sid := range sortedKeys(services) {
		st := services[sid]
		out += `,{"id":"service:` + sid + `","sid":"` + sid + `","node":"pve1","state":"` + st + `","crm_state":"` + st +
			`","request_state":"started","status":"` + sid + ` (pve1, ` + st + `)","max_restart":1,"max_relocate":1,"type":"service"}`
	}
	return out + "]"
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ReplicationJob is one entry of a GET /nodes/{node}/replication
// answer's data: guest's job 0 to target on schedule, last synced at
// lastSync (Unix seconds), failed failCount times in a row with error.
func ReplicationJob(guest int, target, schedule string, lastSync int64, failCount int, error string) string {
	id := strconv.Itoa(guest) + "-0"
	return `{"id":"` + id + `","guest":` + strconv.Itoa(guest) + `,"jobnum":0,"type":"local","target":"` + target +
		`","source":"pve1","schedule":"` + schedule + `","vmtype":"qemu","last_sync":` + inum(lastSync) + `,"last_try":` + inum(lastSync) +
		`,"next_sync":` + inum(lastSync+900) + `,"duration":3.5,"fail_count":` + strconv.Itoa(failCount) + `,"error":"` + error + `"}`
}

// Certificates is a GET /nodes/{node}/certificates/info answer's data:
// the cluster-issued pve-ssl.pem and a custom pveproxy-ssl.pem, each
// valid until its Unix second.
func Certificates(pveSSL, pveproxySSL int64) string {
	cert := func(file, subject, issuer string, notAfter int64) string {
		return `{"filename":"` + file + `","fingerprint":"AB:CD:EF","subject":"` + subject + `","issuer":"` + issuer +
			`","notbefore":1700000000,"notafter":` + inum(notAfter) + `,"san":["pve1","pve1.example.com"],` +
			`"public-key-type":"rsaEncryption","public-key-bits":2048,"pem":"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"}`
	}
	return "[" + cert("pve-ssl.pem", "/OU=PVE Cluster Node/O=Proxmox Virtual Environment/CN=pve1.example.com", "/CN=Proxmox Virtual Environment/OU=f00d/O=PVE Cluster Manager CA", pveSSL) +
		"," + cert("pveproxy-ssl.pem", "/CN=pve1.example.com", "/C=US/O=Let's Encrypt/CN=R11", pveproxySSL) + "]"
}

// Update is one entry of a PVE 8 GET /nodes/{node}/apt/update answer's
// data: pkg from origin (as "Debian", "Debian-Security", "Proxmox") in
// section, from old to version.
func Update(pkg, origin, section, old, version string) string {
	return `{"Arch":"amd64","ChangeLogUrl":"","Description":"","OldVersion":"` + old + `","Origin":"` + origin +
		`","Package":"` + pkg + `","Priority":"optional","Section":"` + section + `","Title":"` + pkg + ` package","Version":"` + version + `"}`
}

// PVE7 rewrites an answer's data as PVE 7 sends it: every number a
// string.
func PVE7(data string) string {
	var b strings.Builder
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"' && (i == 0 || data[i-1] != '\\'):
			inString = !inString
			b.WriteByte(c)
		case !inString && (c == '-' || (c >= '0' && c <= '9')):
			j := i
			for j < len(data) && strings.IndexByte("-+.eE0123456789", data[j]) >= 0 {
				j++
			}
			b.WriteString(`"` + data[i:j] + `"`)
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Set answers path (as "nodes/pve1/status") with data, HTTP 200.
func (s *Server) Set(path, data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[path] = Answer{Body: `{"data":` + data + `}`}
}

// Fail answers path with an HTTP error and PVE's message.
func (s *Server) Fail(path string, status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[path] = Answer{Status: status, Body: `{"data":null,"message":"` + message + `\n"}`}
}

// Unexpected lists the paths asked that no test set.
func (s *Server) Unexpected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unexpected)
}

// admit answers what PVE answers before it routes a request: 405 for
// anything but GET, 401 without the token. It returns the API path.
func admit(w http.ResponseWriter, r *http.Request) (string, bool) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	if r.Method != http.MethodGet {
		http.Error(w, "read only", http.StatusMethodNotAllowed)
		return "", false
	}
	if r.Header.Get("Authorization") != "PVEAPIToken="+TokenID+"="+Secret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"data":null}`))
		return "", false
	}
	return strings.TrimPrefix(r.URL.Path, "/api2/json/"), true
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := admit(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	a, ok := s.answers[p]
	if seg := strings.Split(p, "/"); !ok && len(seg) == 5 && seg[0] == "nodes" && seg[4] == "snapshot" {
		// A guest no test set has no snapshot: PVE lists "current" alone.
		a, ok = Answer{Body: `{"data":[{"name":"current","description":"You are here!","running":1,"digest":"0b1c"}]}`}, true
	}
	if !ok {
		s.unexpected = append(s.unexpected, p)
	}
	s.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = w.Write([]byte(`{"data":null,"message":"Method 'GET /` + p + `' not implemented\n"}`))
		return
	}
	if a.Status != 0 {
		w.WriteHeader(a.Status)
	}
	_, _ = w.Write([]byte(a.Body))
}

// Source is a source section of patrold's configuration (YAML) pointing
// at the stand-in, pinned by its certificate's fingerprint, with the
// secret in a file under dir.
func (s *Server) Source(t testing.TB, dir string) string {
	t.Helper()
	secret := filepath.Join(dir, "pve.token")
	if err := os.WriteFile(secret, []byte(Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(s.Certificate().Raw)
	return "source:\n  kind: proxmox\n  proxmox:\n    url: " + s.URL + "\n    token_id: " + TokenID + "\n" +
		"    token_secret_file: " + secret + "\n    tls: {fingerprint: " + hex.EncodeToString(sum[:]) + "}\n" +
		"    guest_agent: {enabled: false}\n    refresh: 1ns\n    rate: 1000\n" // tests change answers between runs: read every guest every run, unpaced
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func inum(i int64) string { return strconv.FormatInt(i, 10) }
