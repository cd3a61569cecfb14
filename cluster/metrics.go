package cluster

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LeadershipCollectors are the role's metrics: the leader and role
// gauges, when leadership last changed, and a counter of the changes.
func LeadershipCollectors(l *Leadership) []prometheus.Collector {
	changes := prometheus.NewCounter(prometheus.CounterOpts{Name: "patrold_leadership_changes_total",
		Help: "Times this instance became or stopped being the leader (cluster mode)."})
	l.OnChange(func(bool) { changes.Inc() })
	return []prometheus.Collector{changes, &leadershipCollector{l: l}}
}

var (
	leaderDesc = prometheus.NewDesc("patrold_leader",
		"Whether this instance is the writer now (1: a single instance, or the lease holder in cluster mode; 0: a standby).", nil, nil)
	roleDesc = prometheus.NewDesc("patrold_role",
		"This instance's role: 1 for the current one of single, leader, standby, 0 for the others.", []string{"role"}, nil)
	leaderSinceDesc = prometheus.NewDesc("patrold_leadership_since_timestamp_seconds",
		"Unix time leadership last changed (the start, when it never did).", nil, nil)
)

// leadershipCollector reads the role at scrape time.
type leadershipCollector struct{ l *Leadership }

func (c *leadershipCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaderDesc
	ch <- roleDesc
	ch <- leaderSinceDesc
}

func (c *leadershipCollector) Collect(ch chan<- prometheus.Metric) {
	role := c.l.Role()
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, boolValue(role != RoleStandby))
	for _, r := range []Role{RoleSingle, RoleLeader, RoleStandby} {
		ch <- prometheus.MustNewConstMetric(roleDesc, prometheus.GaugeValue, boolValue(r == role), string(r))
	}
	ch <- prometheus.MustNewConstMetric(leaderSinceDesc, prometheus.GaugeValue, float64(c.l.Since().Unix()))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	replicaWriterDesc = prometheus.NewDesc("patrold_replica_writer",
		"Cluster mode: 1 while this instance holds the lease and has caught up with the state stream (it schedules and writes).", nil, nil)
	replicaAppliedDesc = prometheus.NewDesc("patrold_replica_applied_sequence",
		"Cluster mode: stream sequence of the last state change this database applied.", nil, nil)
	replicaLastDesc = prometheus.NewDesc("patrold_replica_last_sequence",
		"Cluster mode: stream sequence of the last state change on the stream.", nil, nil)
	replicaRefusedDesc = prometheus.NewDesc("patrold_replica_refused_total",
		"Cluster mode: malformed state changes skipped since the start.", nil, nil)
	replicaFencedDesc = prometheus.NewDesc("patrold_replica_fenced_total",
		"Cluster mode: state changes ignored as written by a deposed writer (an epoch below one applied).", nil, nil)
	replicaEpochDesc = prometheus.NewDesc("patrold_replica_epoch",
		"Cluster mode: the highest writer epoch the database applied.", nil, nil)
	replicaDivergedDesc = prometheus.NewDesc("patrold_replica_diverged",
		"Cluster mode: 1 while the database holds changes the state stream never got (it is re-seeded, and neither writes nor serves reads).", nil, nil)
	replicaDivergedRowsDesc = prometheus.NewDesc("patrold_replica_diverged_rows_total",
		"Cluster mode: unsent outbox events dropped, and own changes fenced, since the start because another instance wrote since they were committed.", nil, nil)
	replicaResubscribesDesc = prometheus.NewDesc("patrold_replica_resubscribes_total",
		"Cluster mode: times the follower re-subscribed to the state stream, behind it with nothing applied for the stall bound (the lease TTL).", nil, nil)
	replicaReseedsDesc = prometheus.NewDesc("patrold_replica_reseeds_total",
		"Cluster mode: times a diverged database, or one that met a gap in the state stream, was re-seeded from a caught-up instance since the start.", nil, nil)
	replicaNoWriterDesc = prometheus.NewDesc("patrold_cluster_no_writer_total",
		"Cluster mode: times this instance found no instance holding the leader lease (no writer) since the start; it is unready meanwhile.", nil, nil)
	replicaStreamLostDesc = prometheus.NewDesc("patrold_replica_stream_lost_total",
		"Cluster mode: times this instance found the state stream gone (not found) since the start; it is unready meanwhile.", nil, nil)
	replicaDuplicatesDesc = prometheus.NewDesc("patrold_replica_duplicates_total",
		"Cluster mode: state changes skipped since the start because their number was applied before (a change its writer published again).", nil, nil)
	replicaGapsDesc = prometheus.NewDesc("patrold_replica_gaps_total",
		"Cluster mode: gaps met in the state stream (changes missing for good) since the start; each starts a re-seed.", nil, nil)
)

// replicaCollector reads the replica's position at scrape time.
type replicaCollector struct{ r *Member }

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaWriterDesc
	ch <- replicaAppliedDesc
	ch <- replicaLastDesc
	ch <- replicaRefusedDesc
	ch <- replicaFencedDesc
	ch <- replicaEpochDesc
	ch <- replicaDivergedDesc
	ch <- replicaDivergedRowsDesc
	ch <- replicaReseedsDesc
	ch <- replicaGapsDesc
	ch <- replicaDuplicatesDesc
	ch <- replicaStreamLostDesc
	ch <- replicaNoWriterDesc
	ch <- replicaResubscribesDesc
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(replicaWriterDesc, prometheus.GaugeValue, boolValue(c.r.isWriter()))
	ch <- prometheus.MustNewConstMetric(replicaDivergedDesc, prometheus.GaugeValue, boolValue(c.r.f.Diverged() != nil))
	ch <- prometheus.MustNewConstMetric(replicaDivergedRowsDesc, prometheus.CounterValue, float64(c.r.f.divergedRows.Load()))
	ch <- prometheus.MustNewConstMetric(replicaReseedsDesc, prometheus.CounterValue, float64(c.r.reseeds.Load()))
	ch <- prometheus.MustNewConstMetric(replicaGapsDesc, prometheus.CounterValue, float64(c.r.f.Gaps()))
	ch <- prometheus.MustNewConstMetric(replicaDuplicatesDesc, prometheus.CounterValue, float64(c.r.f.Duplicates()))
	ch <- prometheus.MustNewConstMetric(replicaStreamLostDesc, prometheus.CounterValue, float64(c.r.f.StreamLosses()))
	ch <- prometheus.MustNewConstMetric(replicaNoWriterDesc, prometheus.CounterValue, float64(c.r.noWriters.Load()))
	ch <- prometheus.MustNewConstMetric(replicaResubscribesDesc, prometheus.CounterValue, float64(c.r.f.Resubscribes()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if l := c.r.Lag(ctx); l != nil {
		ch <- prometheus.MustNewConstMetric(replicaAppliedDesc, prometheus.GaugeValue, float64(l.AppliedSeq))
		if l.StreamError == "" { // unknown: not exported as 0
			ch <- prometheus.MustNewConstMetric(replicaLastDesc, prometheus.GaugeValue, float64(l.LastSeq))
		}
		ch <- prometheus.MustNewConstMetric(replicaRefusedDesc, prometheus.CounterValue, float64(l.Dropped))
		ch <- prometheus.MustNewConstMetric(replicaFencedDesc, prometheus.CounterValue, float64(l.Fenced))
		ch <- prometheus.MustNewConstMetric(replicaEpochDesc, prometheus.GaugeValue, float64(l.Epoch))
	}
}
