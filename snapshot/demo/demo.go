// Package demo is a seeded, simulated fleet: nodes with guests, storage
// pools, disks and backups, whose faults come and go over time. It exists
// so patrold runs out of the box and so benchmarks have fleets of any size.
package demo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Defaults of the demo source.
const (
	DefaultSeed        = 1
	DefaultResources   = 40
	DefaultFaultRate   = 0.1
	DefaultChangeEvery = 10 * time.Minute
)

// Options configure the demo source (YAML section source.demo).
type Options struct {
	Seed        uint64        `koanf:"seed" json:"seed" yaml:"seed"`
	Resources   int           `koanf:"resources" json:"resources" yaml:"resources"`
	FaultRate   float64       `koanf:"fault_rate" json:"fault_rate" yaml:"fault_rate"`
	ChangeEvery time.Duration `koanf:"change_every" json:"change_every" yaml:"change_every"`
}

// Validate names the offending key.
func (o Options) Validate() error {
	var errs []error
	if o.Resources < 1 || o.Resources > 10_000_000 {
		errs = append(errs, fmt.Errorf("source.demo.resources: %d is outside 1..10000000", o.Resources))
	}
	if o.FaultRate < 0 || o.FaultRate > 1 {
		errs = append(errs, fmt.Errorf("source.demo.fault_rate: %g is outside 0..1", o.FaultRate))
	}
	if o.ChangeEvery < 0 {
		errs = append(errs, fmt.Errorf("source.demo.change_every: %s must not be negative", o.ChangeEvery))
	}
	return errors.Join(errs...)
}

// Source generates a fleet at the time of each collection.
type Source struct {
	opts Options
	now  func() time.Time
}

var _ snapshot.Source = (*Source)(nil)

// New builds a demo source; now may be nil (time.Now).
func New(o Options, now func() time.Time) (*Source, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Source{opts: o, now: now}, nil
}

// Collect generates the fleet as it is now, with the showcase faults
// (Showcase) when it has faults at all.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	snap := Generate(s.opts, s.now())
	if s.opts.FaultRate > 0 {
		Showcase(s.opts, snap)
	}
	return snap, nil, nil
}

// Generate builds a fleet of about o.Resources resources at time at. The
// fleet's shape depends only on the seed and size; which resources are
// faulty changes every o.ChangeEvery (0: never).
func Generate(o Options, at time.Time) *snapshot.Snapshot {
	at = at.UTC().Truncate(time.Second)
	epoch := uint64(0)
	if o.ChangeEvery > 0 {
		epoch = uint64(at.UnixNano() / int64(o.ChangeEvery))
	}
	g := &gen{o: o, at: at, epoch: epoch, shape: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
	snap := &snapshot.Snapshot{Version: snapshot.Version, TakenAt: at, Source: "demo", Resources: make([]snapshot.Resource, 0, o.Resources)}
	perNode := 20
	nodes := max(1, (o.Resources+perNode-1)/perNode)
	for n := 0; n < nodes && len(snap.Resources) < o.Resources; n++ {
		nodeName := fmt.Sprintf("pve%d", n+1)
		nodeID := "node/" + nodeName
		snap.Resources = append(snap.Resources, g.node(nodeID, nodeName))
		budget := min(perNode-1, o.Resources-len(snap.Resources))
		for i := 0; i < budget; i++ {
			var r snapshot.Resource
			switch {
			case i == 0:
				r = g.storage(nodeID, nodeName, "local-zfs")
			case i == 1:
				r = g.storage(nodeID, nodeName, "backup")
			case i < 4:
				r = g.disk(nodeID, nodeName, fmt.Sprintf("sd%c", 'a'+i-2))
			default:
				r = g.guest(nodeID, n*perNode+i)
			}
			snap.Resources = append(snap.Resources, r)
		}
	}
	return snap
}

// Showcase sets, on a generated fleet, the faults a Proxmox operator asks
// about first on its first two nodes. So the demo source shows every kind
// of signal within its first runs; Generate, whose fleets benchmarks and
// the evaluation corpus use, does not call it:
//   - node/pve1: disk sda runs hot (58 °C), disk sdb is worn (15 % left),
//     pool local-zfs is DEGRADED with checksum errors in odd epochs.
//     Storage backup fills steadily (capacity_forecast, with the history
//     BackfillUsage gives). It is also a backup datastore whose nightly
//     verify job failed, with a snapshot that failed verification in odd
//     epochs (backup_job_failed);
//   - node/pve2: disk sda has NVMe critical warning 0x04, disk sdb a SAS
//     grown defect list; the node itself is offline in even epochs.
func Showcase(o Options, snap *snapshot.Snapshot) {
	epoch := uint64(0)
	if o.ChangeEvery > 0 {
		epoch = uint64(snap.TakenAt.UnixNano() / int64(o.ChangeEvery))
	}
	for i := range snap.Resources {
		r := &snap.Resources[i]
		switch r.ID {
		case "disk/pve1/sda":
			r.Smart.TemperatureC = ptr(int64(58))
		case "disk/pve1/sdb":
			r.Smart.WearoutPercent = ptr(int64(15))
		case "disk/pve2/sda":
			r.Smart.NVMeCriticalWarning = 0x04
		case "disk/pve2/sdb":
			r.Smart.GrownDefects = 12
		case "storage/pve1/local-zfs":
			r.ZFS = &snapshot.ZFS{State: "ONLINE"}
			if epoch%2 == 1 {
				r.ZFS = &snapshot.ZFS{State: "DEGRADED", ChecksumErrors: 3}
			}
		case ShowcaseFilling:
			r.Metrics = snapshot.Metrics{{Name: snapshot.MetricUsage, Value: fillingUsage(snap.TakenAt)}}
			r.BackupStore = showcaseJobs(snap.TakenAt, epoch)
		case "node/pve2":
			if epoch%2 == 0 {
				r.Status, r.Metrics = snapshot.StatusOffline, nil
			}
		}
	}
}

// showcaseJobs are the showcase datastore's jobs: garbage collection
// and pruning fine, the nightly verify failed, and in odd epochs a
// snapshot that failed verification.
func showcaseJobs(at time.Time, epoch uint64) *snapshot.BackupStore {
	last := at.Add(-8 * time.Hour).UTC().Truncate(time.Hour)
	bs := &snapshot.BackupStore{Jobs: []snapshot.Job{
		{ID: "backup", Type: "gc", LastStatus: snapshot.BackupOK, LastFinishedAt: &last},
		{ID: "p-daily", Type: "prune", LastStatus: snapshot.BackupOK, LastFinishedAt: &last},
		{ID: "v-nightly", Type: "verify", LastStatus: snapshot.BackupFailed, LastFinishedAt: &last,
			LastError: "verification failed - please check the log for details"},
	}}
	if epoch%2 == 1 {
		bs.VerifyFailed = []string{"vm/100/" + last.Add(-2*time.Hour).Format(time.RFC3339)}
	}
	return bs
}

// ShowcaseFilling is the demo storage that fills steadily.
const ShowcaseFilling = "storage/pve1/backup"

// fillingUsage is ShowcaseFilling's usage at t: rising 1.5 points a day
// from 55 % to 85 % over a 20-day cycle (then pruned back), so it is
// always 10 to 30 days from full.
func fillingUsage(t time.Time) float64 {
	const cycle = 20.0
	days := float64(t.Unix()) / 86400
	phase := days - cycle*float64(int64(days/cycle))
	return float64(int((55+1.5*phase)*100)) / 100
}

// BackfillUsage is the showcase storage's usage over the two days before
// now, every four hours, so a new database forecasts at once.
func (s *Source) BackfillUsage(now time.Time) map[string][]snapshot.UsagePoint {
	if s.opts.FaultRate <= 0 || s.opts.Resources < 2 {
		return nil
	}
	var pts []snapshot.UsagePoint
	for ago := 48 * time.Hour; ago > 0; ago -= 4 * time.Hour {
		at := now.Add(-ago).UTC().Truncate(time.Second)
		pts = append(pts, snapshot.UsagePoint{At: at, Value: fillingUsage(at)})
	}
	return map[string][]snapshot.UsagePoint{ShowcaseFilling: pts}
}

var _ snapshot.UsageBackfiller = (*Source)(nil)

func ptr[T any](v T) *T { return &v }

type gen struct {
	o     Options
	at    time.Time
	epoch uint64
	shape *rand.Rand
}

// fault rolls one per-resource, per-epoch die: with probability FaultRate
// the resource has exactly one of its possible faults for the whole epoch
// ("" otherwise), and the fault set shifts between epochs. FaultRate is so
// the fraction of faulty resources.
func (g *gen) fault(id string, kinds ...string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s|%d", g.o.Seed, id, g.epoch)
	v := h.Sum64()
	if float64(v%1_000_000)/1_000_000 >= g.o.FaultRate {
		return ""
	}
	return kinds[(v/1_000_000)%uint64(len(kinds))]
}

func (g *gen) pct(lo, hi float64) float64 {
	v := lo + g.shape.Float64()*(hi-lo)
	return float64(int(v*10)) / 10
}

func (g *gen) node(id, name string) snapshot.Resource {
	cpu, mem := g.pct(5, 55), g.pct(20, 70)
	switch g.fault(id, "cpu", "memory") {
	case "cpu":
		cpu = g.pct(75, 99)
	case "memory":
		mem = g.pct(82, 98)
	}
	return snapshot.Resource{ID: id, Kind: snapshot.KindNode, Name: name, Status: snapshot.StatusOnline,
		Tags: []string{"demo"}, Metrics: snapshot.Metrics{{Name: "cpu_percent", Value: cpu}, {Name: "cpu_percent_avg", Value: cpu}, {Name: "memory_percent", Value: mem}, {Name: "window_seconds", Value: 900}}}
}

func (g *gen) storage(nodeID, nodeName, pool string) snapshot.Resource {
	id := "storage/" + nodeName + "/" + pool
	use := g.pct(10, 65)
	if g.fault(id, "usage") != "" {
		use = g.pct(76, 99)
	}
	return snapshot.Resource{ID: id, Kind: snapshot.KindStorage, Name: pool, Parent: nodeID, Status: snapshot.StatusOnline,
		Metrics: snapshot.Metrics{{Name: "usage_percent", Value: use}}}
}

func (g *gen) disk(nodeID, nodeName, dev string) snapshot.Resource {
	id := "disk/" + nodeName + "/" + dev
	wear, temp := int64(g.shape.IntN(30)+70), int64(g.shape.IntN(15)+30)
	sm := &snapshot.Smart{Health: "PASSED", WearoutPercent: &wear, TemperatureC: &temp}
	switch g.fault(id, "pending", "crc") {
	case "pending":
		sm.PendingSectors = 2
	case "crc":
		sm.UDMACRCErrors = 4
	}
	return snapshot.Resource{ID: id, Kind: snapshot.KindDisk, Name: dev, Parent: nodeID, Smart: sm}
}

func (g *gen) guest(nodeID string, n int) snapshot.Resource {
	kind, prefix := snapshot.KindVM, "vm"
	if n%3 == 0 {
		kind, prefix = snapshot.KindContainer, "container"
	}
	id := fmt.Sprintf("%s/%d", prefix, 100+n)
	status := snapshot.StatusRunning
	if g.shape.IntN(10) == 0 {
		status = snapshot.StatusStopped
	}
	cpu, mem, disk := g.pct(1, 50), g.pct(10, 70), g.pct(10, 60)
	reachable := true
	fault := g.fault(id, "memory", "disk", "reach", "backup")
	switch fault {
	case "memory":
		mem = g.pct(82, 99)
	case "disk":
		disk = g.pct(76, 99)
	case "reach":
		reachable = false
	}
	last := g.at.Truncate(24 * time.Hour).Add(2 * time.Hour)
	if last.After(g.at) {
		last = last.Add(-24 * time.Hour)
	}
	bk := &snapshot.Backup{LastStatus: snapshot.BackupOK, LastFinishedAt: &last, LastSuccessAt: &last}
	if fault == "backup" {
		bk.LastStatus, bk.LastError = snapshot.BackupFailed, "datastore full"
		older := last.Add(-72 * time.Hour)
		bk.LastSuccessAt = &older
	}
	// A guest's volumes are on its node's local-zfs pool (the first
	// resource after the node, so it exists whenever guests do).
	parents := []string{"storage/" + strings.TrimPrefix(nodeID, "node/") + "/local-zfs"}
	return snapshot.Resource{ID: id, Kind: kind, Name: fmt.Sprintf("%s-%d", prefix, 100+n), Parent: nodeID, Parents: parents,
		Status: status, Tags: []string{"demo"}, Reachable: &reachable,
		Metrics: snapshot.Metrics{{Name: "cpu_percent", Value: cpu}, {Name: "disk_percent", Value: disk}, {Name: "memory_percent", Value: mem}}, Backup: bk}
}

// DefaultOptions is the source.demo section's defaults.
func DefaultOptions() Options {
	return Options{Seed: DefaultSeed, Resources: DefaultResources, FaultRate: DefaultFaultRate, ChangeEvery: DefaultChangeEvery}
}
