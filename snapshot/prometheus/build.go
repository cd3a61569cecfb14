package prometheus

import (
	"math"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/snapshot"
)

// builder turns query results into resources, keyed by canonical id.
type builder struct {
	labels Labels
	window float64 // seconds, written as window_seconds beside _avg values
	byID   map[string]*snapshot.Resource
}

func newBuilder(labels Labels, window time.Duration) *builder {
	return &builder{labels: labels, window: window.Seconds(), byID: map[string]*snapshot.Resource{}}
}

// kindFamily says which query family creates resources of a kind.
var kindFamily = map[snapshot.Kind]family{
	snapshot.KindNode: familyNode, snapshot.KindStorage: familyStorage, snapshot.KindDisk: familyDisk,
	snapshot.KindVM: familyBackup, snapshot.KindContainer: familyBackup,
}

// snapshot returns the resources sorted by id, leaving out those of failed
// families.
func (b *builder) snapshot(now time.Time, failed map[family]bool) *snapshot.Snapshot {
	snap := &snapshot.Snapshot{Version: snapshot.Version, TakenAt: now, Source: DefaultSourceName,
		Resources: make([]snapshot.Resource, 0, len(b.byID))}
	for _, r := range b.byID {
		if !failed[kindFamily[r.Kind]] {
			snap.Resources = append(snap.Resources, *r)
		}
	}
	sort.Slice(snap.Resources, func(i, j int) bool { return snap.Resources[i].ID < snap.Resources[j].ID })
	return snap
}

func (b *builder) get(kind snapshot.Kind, id, name, parent string) *snapshot.Resource {
	id = snapshot.CanonicalID(id)
	if r, ok := b.byID[id]; ok {
		return r
	}
	r := &snapshot.Resource{ID: id, Kind: kind, Name: name, Parent: parent}
	b.byID[id] = r
	return r
}

// nodeName is the configured node label, else the instance host without
// its port.
func (b *builder) nodeName(m model.Metric) string {
	if v := strings.TrimSpace(string(m[model.LabelName(b.labels.Node)])); v != "" {
		return v
	}
	inst := strings.TrimSpace(string(m[model.InstanceLabel]))
	if host, _, err := net.SplitHostPort(inst); err == nil {
		return host
	}
	return inst
}

func (b *builder) node(m model.Metric) *snapshot.Resource {
	name := b.nodeName(m)
	if name == "" {
		return nil
	}
	r := b.get(snapshot.KindNode, "node/"+name, name, "")
	if r.Status == "" {
		r.Status = snapshot.StatusUnknown
	}
	return r
}

// percent clamps a computed percentage into 0..100 (rate extrapolation
// overshoots a little); ok is false for NaN and infinities.
func percent(v model.SampleValue) (float64, bool) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return math.Min(100, math.Max(0, f)), true
}

func (b *builder) nodeUp(s *model.Sample) bool {
	r := b.node(s.Metric)
	if r == nil || math.IsNaN(float64(s.Value)) {
		return false
	}
	if s.Value >= 1 {
		r.Status = snapshot.StatusOnline
	} else if r.Status != snapshot.StatusOnline { // another job may see it up
		r.Status = snapshot.StatusOffline
	}
	return true
}

func nodeMetric(name string) func(*builder, *model.Sample) bool {
	return func(b *builder, s *model.Sample) bool {
		v, ok := percent(s.Value)
		r := b.node(s.Metric)
		if !ok || r == nil {
			return false
		}
		setMetric(r, name, v)
		if strings.HasSuffix(name, "_avg") {
			setMetric(r, snapshot.MetricWindowSeconds, b.window)
		}
		return true
	}
}

func setMetric(r *snapshot.Resource, name string, v float64) {
	r.Metrics.Set(name, v)
}

// storageKey turns a mount point into the last id segment: "/" is "root",
// "/var/lib/vz" is "var/lib/vz".
func storageKey(mount string) string {
	if mount == "/" {
		return "root"
	}
	return strings.TrimPrefix(mount, "/")
}

func (b *builder) storageUsage(s *model.Sample) bool {
	node := b.nodeName(s.Metric)
	mount := strings.TrimSpace(string(s.Metric[model.LabelName(b.labels.Mountpoint)]))
	if mount == "" {
		mount = strings.TrimSpace(string(s.Metric[model.LabelName(b.labels.Device)]))
	}
	v, ok := percent(s.Value)
	if node == "" || storageKey(mount) == "" || !ok {
		return false
	}
	r := b.get(snapshot.KindStorage, "storage/"+node+"/"+storageKey(mount), mount, "node/"+node)
	r.Status = snapshot.StatusOnline
	setMetric(r, snapshot.MetricUsage, v)
	for _, l := range []string{"fstype", b.labels.Device} {
		if v := string(s.Metric[model.LabelName(l)]); v != "" {
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels[l] = v
		}
	}
	return true
}
