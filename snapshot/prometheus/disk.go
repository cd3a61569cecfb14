package prometheus

import (
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/snapshot"
)

// disk returns the disk of a smartctl_exporter series, nil when the series
// names no node or device.
func (b *builder) disk(m model.Metric) *snapshot.Resource {
	node := b.nodeName(m)
	dev := strings.TrimPrefix(strings.TrimSpace(string(m[model.LabelName(b.labels.Device)])), "/dev/")
	if node == "" || dev == "" {
		return nil
	}
	r := b.get(snapshot.KindDisk, "disk/"+node+"/"+dev, dev, "node/"+node)
	if r.Smart == nil {
		r.Smart = &snapshot.Smart{}
	}
	return r
}

// count converts a sample to an attribute count; ok is false when it is not
// a finite number that fits an int64. Negative counts are passed on, and
// snapshot.Decode drops the disk naming the field.
func count(v model.SampleValue) (int64, bool) {
	f := math.Round(float64(v))
	if math.IsNaN(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

func (b *builder) diskHealth(s *model.Sample) bool {
	r := b.disk(s.Metric)
	if r == nil || math.IsNaN(float64(s.Value)) {
		return false
	}
	if s.Value == 1 {
		r.Smart.Health = "PASSED"
	} else {
		r.Smart.Health = "FAILED"
	}
	return true
}

func diskCount(field func(*snapshot.Smart) *int64) func(*builder, *model.Sample) bool {
	return func(b *builder, s *model.Sample) bool {
		n, ok := count(s.Value)
		r := b.disk(s.Metric)
		if !ok || r == nil {
			return false
		}
		*field(r.Smart) = n
		return true
	}
}

func (b *builder) diskWearout(s *model.Sample) bool {
	v, ok := percent(s.Value)
	r := b.disk(s.Metric)
	if !ok || r == nil {
		return false
	}
	n := int64(math.Round(v))
	r.Smart.WearoutPercent = &n
	return true
}

func (b *builder) diskTemperature(s *model.Sample) bool {
	n, ok := count(s.Value)
	r := b.disk(s.Metric)
	if !ok || r == nil {
		return false
	}
	r.Smart.TemperatureC = &n
	return true
}

// guest returns the backup-tracked guest a series names.
func (b *builder) guest(m model.Metric) *snapshot.Resource {
	g := strings.TrimSpace(string(m[model.LabelName(b.labels.Guest)]))
	if g == "" {
		return nil
	}
	kind := snapshot.Kind(strings.ToLower(string(m[model.LabelName(b.labels.GuestKind)])))
	id := string(kind) + "/" + g
	if i := strings.IndexByte(g, '/'); i >= 0 {
		id, kind = snapshot.CanonicalID(g), snapshot.Kind(strings.ToLower(g[:i]))
		g = g[i+1:]
	} else if !kind.Guest() {
		kind, id = snapshot.KindVM, "vm/"+g
	}
	if !kind.Guest() || g == "" {
		return nil
	}
	parent := ""
	if node := strings.TrimSpace(string(m[model.LabelName(b.labels.Node)])); node != "" {
		parent = "node/" + node
	}
	r := b.get(kind, id, g, parent)
	if r.Backup == nil {
		r.Backup = &snapshot.Backup{}
	}
	return r
}

// unixTime converts a timestamp gauge; zero or negative means "never".
func unixTime(v model.SampleValue) (*time.Time, bool) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) || f > 1e11 {
		return nil, false
	}
	if f <= 0 {
		return nil, true
	}
	t := time.Unix(int64(f), 0).UTC()
	return &t, true
}

func (b *builder) backupLastSuccess(s *model.Sample) bool {
	t, ok := unixTime(s.Value)
	r := b.guest(s.Metric)
	if !ok || r == nil {
		return false
	}
	r.Backup.LastSuccessAt = t
	return true
}

func (b *builder) backupLastFinished(s *model.Sample) bool {
	t, ok := unixTime(s.Value)
	r := b.guest(s.Metric)
	if !ok || r == nil {
		return false
	}
	r.Backup.LastFinishedAt = t
	return true
}

// backupLastStatus reads a state set: the series whose value is 1 carries
// the status in its label; series at 0 are the other states.
func (b *builder) backupLastStatus(s *model.Sample) bool {
	if s.Value == 0 {
		return true
	}
	status := strings.ToLower(strings.TrimSpace(string(s.Metric[model.LabelName(b.labels.BackupStatus)])))
	r := b.guest(s.Metric)
	if status == "" || r == nil {
		return false
	}
	switch status {
	case snapshot.BackupOK, snapshot.BackupFailed, snapshot.BackupRunning, snapshot.BackupWarning:
	default:
		status = snapshot.BackupUnknown
	}
	r.Backup.LastStatus = status
	return true
}
