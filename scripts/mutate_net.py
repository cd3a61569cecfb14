#!/usr/bin/env python3
"""Show that every rule of the deterministic net and of grounding is tested:
apply each mutation below (one rule removed or weakened) in turn, run the
tests that guard it, and report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

ATTACKS = ["./cmd/patrold", "-run", "TestPatrolAttacks"]

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("same-run-detection", "patrol/pipeline.go",
     "if detected[signals.Key{Type: typ, ResourceID: id}] {", "if false {", ATTACKS),
    ("detected-never-resolves", "findings/run.go",
     "\tcase CheckDetected:\n", "\tcase -1:\n",
     ["./store", "-run", "TestDetectedConditionIsNeverResolved"]),
    ("daemon-filing-wins", "patrol/pipeline.go",
     "obs = append(obs, withNodes(modelObservations(an.Observations, obs), byID, memo)...)",
     "obs = append(withNodes(an.Observations, byID, memo), obs...)", ATTACKS),
    ("resource-must-be-read", "patrol/analyst/report.go",
     "if !r.facts.Read(resourceID) {", "if false {", ATTACKS),
    ("ground-every-field", "patrol/analyst/report.go",
     "\tif err := r.ground(resourceID, key, texts...); err != nil {",
     "\tif err := r.ground(resourceID, key, texts[len(texts)-1:]...); err != nil {", ATTACKS),
    ("ground-per-resource", "model/ground/ground.go",
     "f := c.res[snapshot.CanonicalID(resourceID)]\n\tif f == nil {",
     "f := c.any()\n\tif f == nil {", ["./cmd/patrold", "./model/ground", "-run", "TestPatrolAttacks|TestGroundingIsPerResource"]),
    ("safe-signal-text", "patrol/pipeline.go",
     "\t\tsafeSignalsParallel(sigs, r.plain)\n", "\n", ["./patrol", "-run", "TestGoldenRunReports"]),
    # Detection while the snapshot decodes (patrol/stream.go) is used only
    # where it is what detecting the decoded snapshot gives.
    ("stream-safe-signal-text", "patrol/stream.go",
     "\tsafeSignals(sigs, memo)\n\treturn sigs, room\n", "\treturn sigs, room\n", ["./patrol", "-run", "TestGoldenRunReports"]),
    ("stream-hysteresis-after-collection", "patrol/stream.go",
     "!maps.Equal(active, s.active)", "!maps.Equal(active, active)",
     ["./patrol", "-run", "TestStreamSeesALateResolve"]),
    ("stream-held-by-the-snapshot", "patrol/stream.go",
     " || snap.HeldFrom() != s.decoding {", " {", ["./patrol", "-run", "TestStreamSeesAnotherDecodingsBatches"]),
    ("decoder-holds-only-without-drops", "snapshot/codec.go",
     "if kept != nil && n > 0 && len(snap.Resources) == n {", "if kept != nil && n > 0 {",
     ["./snapshot", "-run", "TestHeldFrom"]),
    ("decoder-holds-only-what-it-handed", "snapshot/codec.go",
     "if kept != nil && n > 0 && len(snap.Resources) == n {", "if kept != nil && len(snap.Resources) == n {",
     ["./snapshot", "-run", "TestHeldFrom"]),
    ("stream-one-decoding", "patrol/stream.go",
     "\t\t} else if p.decoding != s.decoding { // another decoding's, mid-array: no guess at all",
     "\t\t} else if false {", ["./patrol", "-run", "TestStreamTakesOneDecodingsBatches"]),
    ("stream-later-array-replaces", "patrol/stream.go",
     "\t\tif p.off == 0 { // a (later) array replaces what came before", "\t\tif p.off < 0 {",
     ["./patrol", "-run", "TestStreamSeesASecondResourcesArray"]),
    ("stream-all-resources", "patrol/stream.go",
     "\tif n != len(snap.Resources) {", "\tif n < 0 {", ["./patrol", "-run", "TestStreamTakesOneDecodingsBatches"]),
    ("stream-same-taken-at", "patrol/stream.go",
     "\t\tcase !p.takenAt.Equal(snap.TakenAt):", "\t\tcase false:",
     ["./patrol", "-run", "TestStreamSeesALateTakenAt"]),
    ("decoder-keeps-handed-batches", "snapshot/wire.go",
     "\tkept := make([]Resource, 0, len(rs)-1)", "\tkept := rs[:0]",
     ["./snapshot", "-run", "TestStreamMatchesV1"]),
    ("stream-probe-verdicts", "patrol/stream.go",
     "\t\tcase probed && len(p.cands) > 0:", "\t\tcase false:",
     ["./patrol", "-run", "TestStreamSeesAProbeVerdict"]),
    ("stream-probe-candidates", "patrol/stream.go",
     "\t\t\tif probe.Candidate(r) {", "\t\t\tif probe.Candidate(r) && len(r.Addresses) > 1 {",
     ["./patrol", "-run", "TestStreamSeesAProbeVerdict"]),
    ("structural-neutraliser", "model/prompt/compose.go",
     "res := cv.c.neut.NeutraliseDocument(s)", "res := cv.c.neut.Neutralise(s)", ATTACKS),
]

SIG = ["./signals"]

# The Proxmox operator's detectors (docs/PATROL_ARCHITECTURE.md#signal-catalogue):
# each rule removed or weakened once.
MUTATIONS += [
    ("node-offline", "signals/signals.go",
     "if s, ok := nodeOffline(r); ok {", "if s, ok := nodeOffline(r); ok && false {", SIG + ["-run", "TestNodeOffline"]),
    ("node-offline-unknown", "signals/health.go",
     "r.Status != snapshot.StatusOffline && r.Status != snapshot.StatusUnknown", "r.Status != snapshot.StatusOffline",
     SIG + ["-run", "TestNodeOffline"]),
    ("node-offline-evaluated", "signals/signals.go",
     'return r.Kind == snapshot.KindNode && r.Status != ""', "return r.Kind == snapshot.KindNode",
     SIG + ["-run", "TestNodeOffline"]),
    ("disk-temperature", "signals/signals.go",
     "out = appendLevel(out, r, TypeDiskTemperature,", "_ = appendLevel(out, r, TypeDiskTemperature,",
     SIG + ["-run", "TestDiskTemperature"]),
    ("disk-temperature-edge", "signals/health.go",
     "\t\treturn v >= x\n", "\t\treturn v > x\n", SIG + ["-run", "TestDiskTemperature"]),
    ("disk-wear", "signals/signals.go",
     "out = appendLevel(out, r, TypeDiskWear,", "_ = appendLevel(out, r, TypeDiskWear,", SIG + ["-run", "TestDiskWear"]),
    ("disk-wear-edge", "signals/health.go",
     "\t\t\treturn v <= x\n", "\t\t\treturn v < x\n", SIG + ["-run", "TestDiskWear"]),
    ("disk-level-hysteresis", "signals/health.go",
     "case reached(t.Clear) && active:", "case false && active:", SIG + ["-run", "TestDisk"]),
    ("disk-level-critical", "signals/health.go",
     "if t.Critical > 0 && reached(t.Critical) {", "if false {", SIG + ["-run", "TestDisk"]),
    ("wear-clear-falls", "alerts/alerts.go",
     "out.Wear = applyFalling(out.Wear, s.Disk.Wear)", "out.Wear = apply(out.Wear, s.Disk.Wear)",
     ["./alerts", "-run", "TestDiskThresholds"]),
    ("smart-nvme-critical-warning", "signals/detectors.go",
     "if w := sm.NVMeCriticalWarning; w > 0 {", "if w := sm.NVMeCriticalWarning; w < 0 {", SIG + ["-run", "TestSmartNVMeAndSAS"]),
    ("smart-sas-grown-defects", "signals/detectors.go",
     "if g := sm.GrownDefects; g > 0 {", "if g := sm.GrownDefects; g < 0 {", SIG + ["-run", "TestSmartNVMeAndSAS"]),
    ("zfs-degraded", "signals/health.go",
     '\tcase state == "DEGRADED":\n', "\tcase false:\n", SIG + ["-run", "TestZFSPoolDegraded"]),
    ("zfs-critical-states", "signals/health.go",
     "\tcase zfsCritical[state]:\n", "\tcase false:\n", SIG + ["-run", "TestZFSPoolDegraded"]),
    ("zfs-error-counters", "signals/health.go",
     'if errs > 0 && severity == "" {', "if false {", SIG + ["-run", "TestZFSPoolDegraded"]),
    ("zfs-pool", "signals/signals.go",
     "if s, ok := zfsPool(r); ok {", "if s, ok := zfsPool(r); ok && false {", SIG + ["-run", "TestZFSPoolDegraded"]),
]

# backup_job_failed (a backup datastore's jobs and verifications).
MUTATIONS += [
    ("backup-job-failed", "signals/signals.go",
     "out = appendBackupJobs(out, r, t.BackupJobs, active)", "_ = appendBackupJobs", SIG + ["-run", "TestBackupJobFailed"]),
    ("backup-job-failed-jobs", "signals/health.go",
     "if j.LastStatus == snapshot.BackupFailed {", "if false {", SIG + ["-run", "TestBackupJobFailed"]),
    ("backup-job-failed-verifications", "signals/health.go",
     "n := len(jobs) + len(bs.VerifyFailed)", "n := len(jobs)", SIG + ["-run", "TestBackupJobFailed"]),
    ("backup-job-failed-hysteresis", "signals/health.go",
     "level(float64(n), t, false, active[Key{Type: TypeBackupJobFailed, ResourceID: r.ID}])", "level(float64(n), t, false, false)",
     SIG + ["-run", "TestBackupJobFailed"]),
    ("backup-job-failed-evaluated", "signals/signals.go",
     "return r.Kind == snapshot.KindStorage && r.BackupStore != nil", "return r.Kind == snapshot.KindStorage",
     SIG + ["-run", "TestBackupJobFailed"]),
    ("backup-jobs-clear-at-trigger", "alerts/alerts.go",
     "out.BackupJobs = applyDir(out.BackupJobs, s.Storage.BackupJobs, 0)", "out.BackupJobs = apply(out.BackupJobs, s.Storage.BackupJobs)",
     SIG + ["-run", "TestBackupJob"]),
    ("backup-store-job-type", "snapshot/wire.go",
     "case !slices.Contains(JobTypes, job.Type):", "case false:", ["./snapshot", "-run", "TestBackupStoreField"]),
    ("backup-jobs-clear-rule", "alerts/alerts.go",
     "if t.Clear > t.Trigger {", "if false {", SIG + ["-run", "TestBackupJobsThresholdRules"]),
]

# capacity_forecast and its stored history.
MUTATIONS += [
    ("forecast-min-points", "signals/forecast.go",
     "if len(ps) < MinForecastPoints {", "if len(ps) < 2 {", SIG + ["-run", "TestForecastRobust"]),
    ("forecast-min-span", "signals/forecast.go",
     "if span < MinForecastSpan {", "if false {", SIG + ["-run", "TestForecastRobust"]),
    ("forecast-shrinking", "signals/forecast.go",
     "if t.Trigger <= 0 || fit.perDay <= 0 {", "if t.Trigger <= 0 || fit.perDay == 0 {", SIG + ["-run", "TestForecastRobust"]),
    ("forecast-robust-median", "signals/forecast.go",
     "\tslope := median(slopes)\n", "\tslope := (slopes[0] + slopes[len(slopes)-1]) / 2\n", SIG + ["-run", "TestForecastRobust"]),
    ("forecast-hysteresis", "signals/forecast.go",
     "case days <= t.Clear && active[", "case false && active[", SIG + ["-run", "TestForecastEdges"]),
    ("forecast-warning", "signals/forecast.go",
     "if t.Critical > 0 && days <= t.Critical {", "if false {", SIG + ["-run", "TestForecastEdges"]),
    ("forecast-only-future-excluded", "signals/forecast.go",
     "if !p.At.After(now) && ", "if ", SIG + ["-run", "TestForecastRobust"]),
    ("forecast-cleared-only-where-judged", "patrol/pipeline.go",
     "(typ == signals.TypeCapacityForecast && forecastSeen[id])", "(typ == signals.TypeCapacityForecast)",
     ["./patrol", "-run", "TestForecastThroughTheRun"]),
    ("usage-retention", "store/usage.go",
     "DELETE FROM usage_points WHERE at < ?", "DELETE FROM usage_points WHERE 0 AND at < ?",
     ["./store", "-run", "TestUsageSeries"]),
    ("usage-interval", "store/usage.go",
     "\t\t\tif last[i] > after {\n\t\t\t\tcontinue", "\t\t\tif false && last[i] > after {\n\t\t\t\tcontinue",
     ["./store", "-run", "TestUsageSeries"]),
]

# Alerts and events carry the resource's node.
MUTATIONS += [
    ("alertmanager-node-label", "notify/alertmanager.go",
     '\t\tls["node"] = model.LabelValue(f.Node)\n', "\n", ["./notify", "-run", "TestAlertmanagerNodeLabel"]),
    ("finding-node-of-parent", "patrol/filing.go",
     '\tcase strings.HasPrefix(r.Parent, "node/"):\n', "\tcase false:\n", ["./patrol", "-run", "TestForecastThroughTheRun"]),
    ("model-finding-node", "patrol/pipeline.go",
     "\t\t\tobs[i].ResourceNode = memo.safeName(nodeOf(res))\n\t\t}\n\t}\n\treturn obs", "\t\t\t_ = res\n\t\t}\n\t}\n\treturn obs",
     ["./patrol", "-run", "TestModelFindingsCarryTheNode"]),
    ("finding-node-stored", "store/rows.go",
     "string(tags), f.Silenced, f.Attempt, f.ResourceNode, f.InhibitedBy}", 'string(tags), f.Silenced, f.Attempt, "", f.InhibitedBy}',
     ["./patrol", "-run", "TestForecastThroughTheRun"]),
]

PVE = ["./snapshot/proxmox"]

# What the Proxmox source and the prober must not let through (docs/SOURCES.md).
MUTATIONS += [
    ("agent-skips-container-bridges", "snapshot/proxmox/build.go",
     '(i.Name == "lo" || bridgeLike(i.Name))', '(i.Name == "lo")', PVE + ["-run", "TestAgentAddressesSkipContainerBridges"]),
    ("agent-prefers-configured-mac", "snapshot/proxmox/build.go",
     "byMAC = byMAC || configured[normalMAC(i.MAC)]", "byMAC = byMAC && configured[normalMAC(i.MAC)]",
     PVE + ["-run", "TestAgentAddressesPreferConfiguredMAC|TestCollectCluster"]),
    ("agent-only-configured-mac", "snapshot/proxmox/build.go",
     "if byMAC && !configured[normalMAC(i.MAC)] ||", "if false ||",
     PVE + ["-run", "TestAgentAddressesPreferConfiguredMAC|TestCollectCluster"]),
    ("config-failure-is-a-warning", "snapshot/proxmox/guestconfig.go",
     "\t\tw.res.problems[len(w.res.problems)-1].Warning = true\n", "\n",
     PVE + ["-run", "TestConfigNotReadFallsBackToNames"]),
    ("config-mac-from-model", "snapshot/proxmox/guestconfig.go",
     "\t\t\tif mac == \"\" {\n\t\t\t\tmac = p[m]", "\t\t\tif false {\n\t\t\t\tmac = p[m]",
     PVE + ["-run", "TestGuestConfigNICs|TestCollectCluster"]),
    ("probe-local-stack-not-the-guests", "snapshot/probe/probe.go",
     "\tcase localStackError(err):\n", "\tcase false:\n", ["./snapshot/probe", "-run", "TestLocalStackErrorIsNotTheGuests"]),
    ("probe-unroutable-unknown", "snapshot/probe/probe.go",
     "\t\tcase OutcomeCancelled, OutcomeUnroutable:\n\t\t\tcancelled = true\n",
     "\t\tcase OutcomeCancelled:\n\t\t\tcancelled = true\n\t\tcase OutcomeUnroutable:\n\t\t\tfailed = true\n",
     ["./snapshot/probe", "-run", "TestLocalStackErrorIsNotTheGuests"]),
    ("backup-vmid-from-volid", "snapshot/proxmox/backup.go",
     "\t\tif !ok {\n\t\t\tid, ok = volidVMID(v.VolID)", "\t\tif false {\n\t\t\tid, ok = volidVMID(v.VolID)",
     PVE + ["-run", "TestNewestVolumes"]),
    ("one-filesystem-one-resource", "snapshot/proxmox/collect.go",
     "\tif a.Disk.v == b.Disk.v && a.MaxDisk.v == b.MaxDisk.v {", "\tif false {", PVE + ["-run", "TestOneFilesystem"]),
    ("one-filesystem-same-path", "snapshot/proxmox/collect.go",
     "\tcase pa == pb:\n\t\treturn true", "\tcase pa == pb:\n\t\treturn false", PVE + ["-run", "TestOneFilesystem"]),
    ("one-filesystem-nested-path", "snapshot/proxmox/collect.go",
     "\tcase nested(pa, pb) || nested(pb, pa):", "\tcase false:",
     PVE + ["-run", "TestOneFilesystem|TestStorageOnePathOneFinding"]),
    ("one-filesystem-nested-same-size", "snapshot/proxmox/collect.go",
     "<= totalSlack*math.Max(a.MaxDisk.v, b.MaxDisk.v)", ">= 0*math.Max(a.MaxDisk.v, b.MaxDisk.v)",
     PVE + ["-run", "TestOneFilesystem|TestStorageOnePathOneFinding"]),
    ("one-filesystem-dir-paths-only", "snapshot/proxmox/collect.go",
     '(c.Type == "dir" || c.Type == "btrfs") && ', "",
     PVE + ["-run", "TestStoragePaths"]),
    ("storage-paths-kept", "snapshot/proxmox/collect.go",
     "\treturn s.paths, &p\n}", "\treturn nil, &p\n}", PVE + ["-run", "TestStorageConfigFailsAfterARead"]),
    ("one-filesystem-fullest", "snapshot/proxmox/collect.go",
     "MetricUsage); u > cur {", "MetricUsage); u < cur {", PVE + ["-run", "TestGroupResourceTakesTheFullest"]),
    ("one-filesystem-named", "signals/detectors.go",
     '\t\ts.Summary += "; one filesystem shared by "', '\t\t_ = "; one filesystem shared by "',
     SIG + ["-run", "TestOneFilesystemNamesEveryStorage"]),
    ("backup-names-its-storage", "snapshot/proxmox/build.go",
     "\t\tb.Storage = newest.storage\n", "\n", PVE + ["-run", "TestTaskLogBudget"]),
    ("backup-evidence-storage", "signals/detectors.go",
     '\t\tev["last_success_storage"] = clip(b.Storage, MaxNameRunes)\n', "\n", PVE + ["-run", "TestPatrolRunOverCluster"]),
]

# Several sources in one run (docs/SOURCES.md#several-sources).
MULTI = ["./snapshot/multi"]
SOURCES = ["./patrol", "-run", "TestAFailedSourceNeverResolvesWhatItCovers|TestASourceNeverSeenCoversEverythingAbsent"]
MUTATIONS += [
    ("failed-source-keeps-absent-open", "patrol/pipeline.go",
     "if failed != nil && failed(id) {", "if false {", SOURCES),
    ("failed-source-unseen-covers-all", "patrol/pipeline.go",
     "if covered, known := cs.Covers(name, id); covered || !known {", "if covered, _ := cs.Covers(name, id); covered {", SOURCES),
    ("failed-source-only-what-it-covers", "patrol/pipeline.go",
     "if covered, known := cs.Covers(name, id); covered || !known {", "if covered, known := cs.Covers(name, id); covered || known || !known {", SOURCES),
    ("failed-source-run-incomplete", "patrol/pipeline.go",
     "rep.partial = len(failedSources) > 0", "rep.partial = false", SOURCES),
    ("failed-source-files-its-finding", "patrol/pipeline.go",
     "obs = append(obs, memberFailing(name, problems))", "_ = name", SOURCES),
    ("duplicate-id-across-sources", "snapshot/multi/multi.go",
     "if by := dup[res.ID]; len(by) > 0 {", "if by := dup[res.ID]; len(by) < 0 {", MULTI + ["-run", "TestDuplicateIDAcrossSources"]),
    ("sources-entry-defaults", "config/load.go",
     "\t\t\tmemberDefaults,\n", "\n", ["./config", "-run", "TestSourcesList"]),
    ("sources-or-source-kind", "snapshot/sources/sources.go",
     "if len(list) > 0 && single.Kind != DefaultConfig().Kind {", "if false {", ["./config", "-run", "TestSourcesListErrors"]),
    ("sources-unique-names", "snapshot/sources/sources.go",
     "\tcase names[m.Name]:\n", "\tcase false:\n", ["./config", "-run", "TestSourcesListErrors"]),
    ("sources-built-merged", "daemon/root.go",
     "\tif len(cfg.Sources) == 0 {\n\t\treturn buildOne(cfg.Source, now, m)", "\tif true {\n\t\treturn buildOne(cfg.Source, now, m)",
     ["./daemon", "-run", "TestSourcesListBuildsOneMergedSource"]),
    ("source-failed-named", "snapshot/codec.go",
     "return p.Index < 0 && p.Field == FieldCollect && p.Source != \"\"", "return false", MULTI + ["-run", "TestAFailingSource"]),
]

# The PBS source (docs/SOURCES.md#pbs).
PBS = PVE + ["-run", "TestPBS"]
MUTATIONS += [
    ("pbs-failed-run", "snapshot/proxmox/pbs.go",
     "out.LastStatus, out.LastError = snapshot.BackupFailed, clip(state)", "out.LastStatus = snapshot.BackupOK", PBS),
    ("pbs-job-list-failed-leaves-out", "snapshot/proxmox/pbs.go",
     "\t\t\tjobsKnown = false\n", "\n", PBS),
    ("pbs-verify-failed", "snapshot/proxmox/pbs.go",
     's.Verification.State != "failed"', 's.Verification.State == "never"', PBS),
    ("pbs-disabled-skipped", "snapshot/proxmox/pbs.go",
     'if j.Disabled || j.Store == "" {', 'if j.Store == "" {', PBS),
    ("pbs-metrics-registered", "daemon/root.go",
     "o.Now, o.Registerer, o.Metrics = now, m.reg, m.pbs", "o.Now = now",
     ["./daemon", "-run", "TestPVEAndPBSMetricsRegisteredOnce"]),
    ("pbs-metrics-shared", "snapshot/proxmox/pbs.go",
     "\t\tc.metrics = opts.Metrics.m\n\t} else if", "\t\tc.metrics, _ = newMetrics(nil, pbsAPI)\n\t} else if",
     PVE + ["-run", "TestPBSRequestTimings"]),
    ("pbs-endpoint-families", "snapshot/proxmox/metrics.go",
     "\t\treturn s[1] + \"_jobs\"", "\t\treturn \"snapshots\"", PVE + ["-run", "TestPBSRequestTimings"]),
    ("pbs-token-scheme", "snapshot/proxmox/client.go",
     "if c.scheme == pbsScheme {", "if false {", PBS),
]

# ground-per-resource needs a stand-in that merges every resource's facts.
ANY_FACTS = '''
func (c *Corpus) any() *facts {
	all := &facts{seen: map[quantityKey]bool{}, ids: map[string]bool{}}
	for _, f := range c.res {
		all.quantities = append(all.quantities, f.quantities...)
		all.times = append(all.times, f.times...)
		for k := range f.ids {
			all.ids[k] = true
		}
	}
	return all
}
'''


if __name__ == "__main__":
    run(MUTATIONS, {"ground-per-resource": ANY_FACTS})
