package proxmox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// synthetic answers for a cluster of nodes×guests (half VMs, half
// containers, all running and backed up by one job), two disks per node, a
// shared backup storage; generated here, never stored.
func synthetic(nodes, guests int) map[string]string {
	out := map[string]string{}
	var res, vols []string
	for n := range nodes {
		node := fmt.Sprintf("pve%d", n+1)
		res = append(res, fmt.Sprintf(`{"id":"node/%s","type":"node","node":%q,"status":"online","cpu":0.3,"maxcpu":32,"mem":1e11,"maxmem":2.5e11}`, node, node),
			fmt.Sprintf(`{"id":"storage/%s/local-lvm","type":"storage","storage":"local-lvm","node":%q,"status":"available","disk":4e11,"maxdisk":1e12,"content":"images,rootdir","plugintype":"lvmthin","shared":0}`, node, node),
			fmt.Sprintf(`{"id":"storage/%s/pbs","type":"storage","storage":"pbs","node":%q,"status":"available","disk":4e12,"maxdisk":1e13,"content":"backup","plugintype":"pbs","shared":1}`, node, node))
		var tasks []string
		for g := range guests {
			id := 100 + n*guests + g
			typ := "qemu"
			if g%2 == 1 {
				typ = "lxc"
			}
			res = append(res, fmt.Sprintf(`{"id":"%s/%d","type":%q,"vmid":%d,"name":"g%d","node":%q,"status":"running","cpu":0.1,"maxcpu":4,"mem":2e9,"maxmem":8e9,"disk":1e9,"maxdisk":3.2e10,"template":0,"tags":"prod;app"}`, typ, id, typ, id, id, node))
			vols = append(vols, fmt.Sprintf(`{"volid":"pbs:backup/%d","content":"backup","ctime":1795917900,"vmid":%d}`, id, id))
			tasks = append(tasks, fmt.Sprintf(`{"upid":"UPID:%s:%d","node":%q,"type":"vzdump","id":"%d","starttime":1795917600,"endtime":1795918800,"status":"OK"}`, node, id, node, id))
			mac := fmt.Sprintf("bc:24:11:%02x:%02x:%02x", n, g/250, g%250)
			out[fmt.Sprintf("nodes/%s/%s/%d/config", node, typ, id)] = fmt.Sprintf(`{"cores":4,"memory":"8192","net0":"virtio=%s,bridge=vmbr0","scsi0":"local-lvm:vm-%d-disk-0,size=32G"}`, mac, id)
			out[fmt.Sprintf("nodes/%s/qemu/%d/agent/network-get-interfaces", node, id)] = fmt.Sprintf(`{"result":[{"name":"eth0","hardware-address":%q,"ip-addresses":[{"ip-address-type":"ipv4","ip-address":"10.%d.%d.%d"}]}]}`, mac, n, g/250, g%250)
		}
		out["nodes/"+node+"/tasks"] = "[" + strings.Join(tasks, ",") + "]"
		out["nodes/"+node+"/disks/list"] = `[{"devpath":"/dev/sda","type":"ssd","health":"PASSED","wearout":97},{"devpath":"/dev/sdb","type":"hdd","health":"PASSED","wearout":"N/A"}]`
		out["nodes/"+node+"/disks/zfs"] = `[]`
		out["nodes/"+node+"/disks/smart"] = `{"health":"PASSED","type":"ata","attributes":[{"id":"  5","raw":"0"},{"id":"197","raw":"0"},{"id":"194","raw":"35"}]}`
	}
	out["cluster/resources"] = "[" + strings.Join(res, ",") + "]"
	out["cluster/backup"] = `[{"id":"backup-1","type":"vzdump","enabled":1,"all":1,"storage":"pbs"}]`
	out["nodes/pve1/storage/pbs/content"] = "[" + strings.Join(vols, ",") + "]"
	return out
}

// BenchmarkCollect measures one whole collection over loopback HTTPS:
// requests, decoding, mapping and the codec round trip.
func BenchmarkCollect(b *testing.B) {
	for _, size := range []struct{ nodes, guests int }{{3, 10}, {16, 25}} {
		b.Run(fmt.Sprintf("nodes=%d/guests=%d", size.nodes, size.guests), func(b *testing.B) {
			answers := synthetic(size.nodes, size.guests)
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				data, ok := answers[strings.TrimPrefix(r.URL.Path, "/api2/json/")]
				if !ok {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write([]byte(`{"data":` + data + `}`))
			}))
			defer srv.Close()
			src := newSource(b, testOptions(b, srv))
			want := size.nodes*(1+2+1) + size.nodes*size.guests + 1
			for b.Loop() {
				snap, problems, err := src.Collect(context.Background())
				if err != nil || len(problems) != 0 || len(snap.Resources) != want {
					b.Fatalf("err %v problems %v resources %d, want %d", err, problems, len(snap.Resources), want)
				}
			}
			b.ReportMetric(float64(want), "resources")
		})
	}
}

// BenchmarkScale measures what a patrol costs the cluster it watches: a
// first and a steady collection (a minute on) from one source over the
// scale stand-in (loopback TLS, keep-alive, 20 ms a request, one guest in
// ten with a snapshot), then one at the default schedule's next run (6 h
// on) and one a day on, when every copy is older than refresh. It
// reports requests per run and per guest, wall time and the process's CPU
// time (stand-in included). docs/PERFORMANCE.md#proxmox-requests has the
// figures.
func BenchmarkScale(b *testing.B) {
	for _, size := range []struct{ nodes, guests int }{{10, 50}, {20, 100}} {
		b.Run(fmt.Sprintf("nodes=%d/guests=%d", size.nodes, size.guests), func(b *testing.B) {
			pve := pvetest.NewScale(b, size.nodes, size.guests, 20*time.Millisecond)
			withSnapshots(pve, size.nodes*size.guests, 10)
			guests := float64(size.nodes * size.guests)
			var runs [4]scaleRun
			for b.Loop() {
				now := evalTime
				o := scaleOptions(b, pve)
				o.Now = func() time.Time { return now }
				src := newSource(b, o)
				for i, at := range []time.Duration{0, time.Minute, 6 * time.Hour, 24 * time.Hour} {
					now = evalTime.Add(at)
					runs[i] = collectAt(b, pve, src)
				}
			}
			for i, name := range []string{"first", "steady", "6h", "24h"} {
				b.ReportMetric(float64(runs[i].requests), name+"-requests")
				b.ReportMetric(float64(runs[i].requests)/guests, name+"-req/guest")
				b.ReportMetric(runs[i].wall.Seconds(), name+"-s")
				b.ReportMetric(runs[i].cpu.Seconds(), name+"-cpu-s")
			}
		})
	}
}

// withSnapshots gives one in every guests of the stand-in's n guests a
// snapshot a month old.
func withSnapshots(pve *pvetest.Scale, n, every int) {
	for id := 100; id < 100+n; id += every {
		pve.Guest(id, func(g *pvetest.Guest) { g.SnapshotAt = evalTime.Add(-30 * 24 * time.Hour).Unix() })
	}
}

// scaleRun is what one collection cost.
type scaleRun struct {
	requests  int
	wall, cpu time.Duration
}

// scaleOptions are the source's options for the scale stand-in.
func scaleOptions(t testing.TB, pve *pvetest.Scale) Options {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(secret, []byte(pvetest.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.URL, o.TokenID, o.TokenSecretFile = pve.URL, pvetest.TokenID, secret
	o.TLS.Fingerprint = fingerprint(pve.Server)
	o.Now = func() time.Time { return evalTime }
	return o
}

// collectAt runs one collection and counts its requests at the stand-in.
func collectAt(t testing.TB, pve *pvetest.Scale, src *Source) scaleRun {
	t.Helper()
	pve.Reset()
	cpu0, start := cpuTime(t), time.Now()
	_, problems, err := src.Collect(context.Background())
	wall := time.Since(start)
	if err != nil || len(problems) != 0 {
		t.Fatalf("collect: err %v, problems %v", err, problems)
	}
	return scaleRun{requests: pve.Requests(), wall: wall, cpu: cpuTime(t) - cpu0}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScaleOverlap measures what node_overlap gives a first run at
// 20 x 100 guests, 20 ms a request, where rate allows more than one
// request in flight a node (100 a second): in sequence and 4 at once.
func BenchmarkScaleOverlap(b *testing.B) {
	for _, overlap := range []int{1, 4} {
		b.Run(fmt.Sprintf("rate=100/node_overlap=%d", overlap), func(b *testing.B) {
			pve := pvetest.NewScale(b, 20, 100, 20*time.Millisecond)
			withSnapshots(pve, 2000, 10)
			var first scaleRun
			for b.Loop() {
				o := scaleOptions(b, pve)
				o.Rate, o.NodeOverlap = 100, overlap
				first = collectAt(b, pve, newSource(b, o))
			}
			b.ReportMetric(float64(first.requests), "first-requests")
			b.ReportMetric(first.wall.Seconds(), "first-s")
			b.ReportMetric(first.cpu.Seconds(), "first-cpu-s")
		})
	}
}
