package proxmox

import (
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// percent is 100*part/whole clamped to 0..100 and rounded to 0.01; ok is
// false when it is not a number (whole not positive, or overflow).
func percent(part, whole float64) (float64, bool) {
	p := 100 * part / whole
	if whole <= 0 || math.IsNaN(p) {
		return 0, false
	}
	return math.Round(min(max(p, 0), 100)*100) / 100, true
}

// setPercent records a percentage metric when it is a number.
func setPercent(m *snapshot.Metrics, name string, part, whole float64) {
	if v, ok := percent(part, whole); ok {
		m.Set(name, v)
	}
}

// nodeResource maps a node entry and, when it was read, its status: swap
// in use of its size, and IO wait as a percentage like cpu.
func nodeResource(r clusterResource, st *nodeStatus) snapshot.Resource {
	out := snapshot.Resource{ID: "node/" + r.Node, Kind: snapshot.KindNode, Name: r.Node, Status: snapshot.StatusUnknown}
	switch r.Status {
	case "online":
		out.Status = snapshot.StatusOnline
	case "offline":
		out.Status = snapshot.StatusOffline
	}
	if out.Status == snapshot.StatusOnline {
		out.Metrics = snapshot.Metrics{}
		if r.CPU.set {
			setPercent(&out.Metrics, snapshot.MetricCPU, r.CPU.v, 1)
		}
		if r.Mem.set {
			setPercent(&out.Metrics, snapshot.MetricMemory, r.Mem.v, r.MaxMem.v)
		}
		if st != nil {
			if st.Swap.Used.set && st.Swap.Total.set {
				setPercent(&out.Metrics, snapshot.MetricSwap, st.Swap.Used.v, st.Swap.Total.v)
			}
			if st.Wait.set {
				setPercent(&out.Metrics, snapshot.MetricIOWait, st.Wait.v, 1)
			}
		}
	}
	return out
}

func guestStatus(s string) string {
	switch s {
	case "running":
		return snapshot.StatusRunning
	case "stopped":
		return snapshot.StatusStopped
	case "paused", "suspended", "prelaunch":
		return snapshot.StatusPaused
	}
	return snapshot.StatusUnknown
}

// guestResource maps a qemu or lxc entry. Metrics are reported for running
// and paused guests on online nodes only; a VM's disk is reported only when
// the API gives it (it reports 0 for VMs without a guest agent view).
func guestResource(r clusterResource, nodeOnline bool) snapshot.Resource {
	out := snapshot.Resource{ID: guestID(r), Name: r.Name, Parent: "node/" + r.Node,
		Status: guestStatus(r.Status), Tags: splitList(r.Tags)}
	out.Kind = snapshot.KindVM
	if r.Type == "lxc" {
		out.Kind = snapshot.KindContainer
	}
	labels := map[string]string{}
	for k, v := range map[string]string{"hastate": r.HAState, "pool": r.Pool, "lock": r.Lock} {
		if v != "" {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		out.Labels = labels
	}
	if nodeOnline && (out.Status == snapshot.StatusRunning || out.Status == snapshot.StatusPaused) {
		out.Metrics = snapshot.Metrics{}
		if r.CPU.set {
			setPercent(&out.Metrics, snapshot.MetricCPU, r.CPU.v, 1)
		}
		if r.Mem.set {
			setPercent(&out.Metrics, snapshot.MetricMemory, r.Mem.v, r.MaxMem.v)
		}
		if r.Disk.v > 0 {
			setPercent(&out.Metrics, snapshot.MetricDisk, r.Disk.v, r.MaxDisk.v)
		}
	}
	return out
}

func storageResource(e storageEntry) snapshot.Resource {
	out := snapshot.Resource{ID: e.id(), Kind: snapshot.KindStorage, Name: e.Storage, Parent: "node/" + e.Node}
	switch e.Status {
	case "available":
		out.Status = snapshot.StatusOnline
		if e.Disk.set {
			out.Metrics = snapshot.Metrics{}
			setPercent(&out.Metrics, snapshot.MetricUsage, e.Disk.v, e.MaxDisk.v)
		}
	case "", "unknown":
		out.Status = snapshot.StatusUnknown
	default:
		out.Status = snapshot.StatusOffline
	}
	out.Labels = map[string]string{}
	if e.PluginType != "" {
		out.Labels["type"] = e.PluginType
	}
	if e.shared {
		out.Labels["shared"] = "true"
	}
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	return out
}

func diskResource(node string, d diskRead) snapshot.Resource {
	dev := strings.TrimPrefix(d.disk.DevPath, "/dev/")
	out := snapshot.Resource{ID: "disk/" + node + "/" + dev, Kind: snapshot.KindDisk, Name: dev, Parent: "node/" + node}
	labels := map[string]string{}
	for k, v := range map[string]string{"model": d.disk.Model, "serial": d.disk.Serial, "type": d.disk.Type} {
		if v != "" {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		out.Labels = labels
	}
	if d.smart != nil {
		out.Smart = smartOf(d.disk, d.smart)
	}
	return out
}

// ATA attribute ids of the counters the snapshot contract has.
const (
	attrReallocated = 5
	attrAirflowTemp = 190
	attrTemperature = 194
	attrPending     = 197
	attrOfflineUnc  = 198
	attrUDMACRC     = 199
)

func smartOf(d disk, s *smart) *snapshot.Smart {
	out := &snapshot.Smart{Health: strings.ToUpper(strings.TrimSpace(s.Health))}
	if out.Health == "" {
		out.Health = strings.ToUpper(strings.TrimSpace(d.Health))
	}
	// Life left: the disk list's, else the SMART answer's own.
	for _, w := range []number{d.Wearout, s.Wearout} {
		if w.set && w.v >= 0 && w.v <= 100 {
			left := int64(w.v)
			out.WearoutPercent = &left
			break
		}
	}
	var airflow *int64
	for _, a := range s.Attributes {
		id, err := strconv.Atoi(strings.TrimSpace(string(a.ID)))
		if err != nil {
			continue
		}
		raw, ok := leadingInt(string(a.Raw))
		if !ok {
			continue
		}
		switch id {
		case attrReallocated:
			out.ReallocatedSectors = raw
		case attrPending:
			out.PendingSectors = raw
		case attrOfflineUnc:
			out.OfflineUncorrectable = raw
		case attrUDMACRC:
			out.UDMACRCErrors = raw
		case attrTemperature:
			out.TemperatureC = &raw
		case attrAirflowTemp:
			airflow = &raw
		}
	}
	if out.TemperatureC == nil {
		out.TemperatureC = airflow
	}
	if s.Type == "text" {
		smartText(s.Text, out)
	}
	return out
}

// smartText reads smartctl's text report as PVE passes it through: the
// NVMe health log and the SAS (SCSI) error counters.
func smartText(text string, out *snapshot.Smart) {
	for _, line := range strings.Split(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "Critical Warning":
			// A hex byte, "0x04".
			if w, err := strconv.ParseInt(strings.TrimPrefix(strings.ToLower(val), "0x"), 16, 64); err == nil && w >= 0 {
				out.NVMeCriticalWarning = w
			}
			continue
		case "SMART Health Status":
			// SAS: "OK", or the failure's words.
			if out.Health == "" {
				out.Health = strings.ToUpper(val)
			}
			continue
		}
		n, ok := leadingInt(strings.ReplaceAll(val, ",", ""))
		if !ok {
			continue
		}
		switch key {
		case "Elements in grown defect list":
			out.GrownDefects = n
		case "Current Drive Temperature":
			if out.TemperatureC == nil {
				out.TemperatureC = &n
			}
		case "Media and Data Integrity Errors":
			out.MediaErrors = n
		case "Temperature":
			if out.TemperatureC == nil {
				out.TemperatureC = &n
			}
		case "Percentage Used":
			if out.WearoutPercent == nil && n >= 0 {
				left := max(100-n, 0)
				out.WearoutPercent = &left
			}
		}
	}
}

// poolResource maps a ZFS pool: its capacity as usage_percent, its state
// (the status tree's, else the list's) and its error counters.
func poolResource(node string, p poolRead) snapshot.Resource {
	out := snapshot.Resource{ID: "storage/" + node + "/zpool/" + p.pool.Name, Kind: snapshot.KindStorage, Name: p.pool.Name,
		Parent: "node/" + node, Status: snapshot.StatusOnline, Labels: map[string]string{"type": "zpool"}}
	state := strings.ToUpper(strings.TrimSpace(p.pool.Health))
	z := &snapshot.ZFS{}
	if d := p.detail; d != nil {
		if st := strings.ToUpper(strings.TrimSpace(d.State)); st != "" {
			state = st
		}
		z.ReadErrors, z.WriteErrors, z.ChecksumErrors = poolErrors(d)
		z.Scrub = scrubOf(d.Scan)
	}
	z.State = state
	out.ZFS = z
	switch state {
	case "FAULTED", "UNAVAIL", "SUSPENDED", "OFFLINE", "REMOVED":
		out.Status = snapshot.StatusOffline
	default:
		if p.pool.Size.set && p.pool.Alloc.set {
			out.Metrics = snapshot.Metrics{}
			setPercent(&out.Metrics, snapshot.MetricUsage, p.pool.Alloc.v, p.pool.Size.v)
		}
	}
	return out
}

// poolErrors are the pool's read, write and checksum errors: for each,
// the larger of the pool's own line and the sum over its devices (zpool
// counts an error on the device it happened on, and some on the pool
// alone).
func poolErrors(d *zpoolDetail) (r, w, c int64) {
	var leaves [3]int64
	var walk func(vs []vdev)
	walk = func(vs []vdev) {
		for _, v := range vs {
			if len(v.Children) > 0 {
				walk(v.Children)
				continue
			}
			leaves[0] += count(v.Read)
			leaves[1] += count(v.Write)
			leaves[2] += count(v.Cksum)
		}
	}
	var own [3]int64
	for _, top := range d.Children {
		if top.Name == d.Name {
			own = [3]int64{count(top.Read), count(top.Write), count(top.Cksum)}
			walk(top.Children)
			continue
		}
		walk([]vdev{top})
	}
	return max(own[0], leaves[0]), max(own[1], leaves[1]), max(own[2], leaves[2])
}

// count is a non-negative whole counter (absent, negative or not a
// number is 0; a huge one is capped).
func count(n number) int64 {
	if !n.set || n.v <= 0 || math.IsNaN(n.v) {
		return 0
	}
	return int64(min(n.v, 1<<53))
}

// leadingInt parses the integer a raw SMART value starts with
// ("36 (Min/Max 20/45)" is 36).
func leadingInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	return n, err == nil
}

// agentAddresses turns the agent's interfaces into host:port pairs for the
// prober. Loopback, link-local and unspecified addresses are left out.
// Which interfaces count:
//   - those whose MAC is one of the guest's configured NICs, when any is;
//   - else all but loopback and the interfaces of container networks
//     inside the guest (bridgeLike).
//
// Container networks' addresses (Docker's 172.17.0.1, weave's 10.42.0.1)
// are the same in every guest that runs them. On a patrol host running
// Docker itself, 172.17.0.1:22 is that host, so a dead guest would probe
// as reachable.
func agentAddresses(ifs agentInterfaces, nics []nic, port int) []string {
	configured := map[string]bool{}
	for _, n := range nics {
		if n.MAC != "" {
			configured[n.MAC] = true
		}
	}
	byMAC := false
	for _, i := range ifs.Result {
		byMAC = byMAC || configured[normalMAC(i.MAC)]
	}
	var out []string
	seen := map[string]bool{}
	for _, i := range ifs.Result {
		if byMAC && !configured[normalMAC(i.MAC)] || !byMAC && (i.Name == "lo" || bridgeLike(i.Name)) {
			continue
		}
		for _, a := range i.Addresses {
			ip, err := netip.ParseAddr(strings.TrimSpace(a.Address))
			if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
				continue
			}
			hp := net.JoinHostPort(ip.WithZone("").String(), strconv.Itoa(port))
			if !seen[hp] {
				seen[hp] = true
				out = append(out, hp)
			}
		}
	}
	return out
}

// backupOf is a guest's backup state; the newest volume's storage is
// named, so a backup found on another node's local storage (the guest
// migrated since) says where it is.
func backupOf(run backupRun, ok bool, newest newestBackup) *snapshot.Backup {
	b := &snapshot.Backup{LastStatus: snapshot.BackupUnknown}
	if ok {
		b.LastStatus, b.LastFinishedAt, b.LastError = run.Status, run.Finished, run.Error
	}
	if newest.ctime > 0 {
		t := time.Unix(newest.ctime, 0).UTC()
		b.LastSuccessAt = &t
		b.Storage = newest.storage
		if newest.verify != "" {
			b.Verify = &snapshot.Verify{State: newest.verify}
			if newest.verifiedAt > 0 {
				v := time.Unix(newest.verifiedAt, 0).UTC()
				b.Verify.LastOKAt = &v
			}
		}
	}
	return b
}

// virtualPrefixes name the interfaces container runtimes and overlay
// networks create inside a guest.
var virtualPrefixes = []string{"docker", "br-", "veth", "cni", "flannel", "weave", "vxlan", "cali", "cilium",
	"kube-", "virbr", "lxcbr", "lxdbr", "podman", "tunl", "datapath"}

// bridgeLike reports whether an interface name is one of virtualPrefixes'.
func bridgeLike(name string) bool {
	for _, p := range virtualPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
