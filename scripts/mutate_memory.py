#!/usr/bin/env python3
"""Show that every rule of what a run leaves behind is tested: the memory
a daemon gives back after each run, the one-shot run's report (text
counts, JSON printed as the indenting encoder would) and the usage
history a run touches (only due points written, only ready series read),
the run's memo of sanitised text (what prompt.Safe would give) and the
binary's pages given back after a run (only its read-only, uncopied
mappings).
Apply each mutation below (one rule removed) in turn, run the tests that
guard it, and report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("daemon-releases-after-run", "daemon/daemon.go",
     "AfterCommit: d.afterRun, Release: d.releaseMemory,", "AfterCommit: d.afterRun,",
     ["./daemon", "-run", "TestRunGivesItsPeakBack"]),
    ("release-frees-the-heap", "patrol/runner.go",
     "func ReleaseMemory() { debug.FreeOSMemory() }", "func ReleaseMemory() { _ = debug.FreeOSMemory }",
     ["./daemon", "-run", "TestRunGivesItsPeakBack"]),
    ("runner-calls-release", "patrol/runner.go",
     "\tif r.opts.Release != nil {\n\t\tr.opts.Release()\n\t}\n", "",
     ["./patrol", "-run", "TestReleaseAfterTheRunIsHandedOn"]),
    ("release-after-aftercommit", "patrol/runner.go",
     "\tif r.opts.AfterCommit != nil {\n\t\tr.opts.AfterCommit(rep)\n\t}\n\tif r.opts.Release != nil {\n\t\tr.opts.Release()\n\t}\n",
     "\tif r.opts.Release != nil {\n\t\tr.opts.Release()\n\t}\n\tif r.opts.AfterCommit != nil {\n\t\tr.opts.AfterCommit(rep)\n\t}\n",
     ["./patrol", "-run", "TestReleaseAfterTheRunIsHandedOn"]),
    ("store-shrinks-commit-cache", "store/release.go",
     '"PRAGMA shrink_memory"', '"SELECT 1"',
     ["./store", "-run", "TestReleaseMemoryEmptiesTheCommitCache"]),
    ("run-text-counts-unchanged", "cmd/patrold/run.go",
     "if f.Change == findings.ChangeUnchanged && !all {", "if false && f.Change == findings.ChangeUnchanged && !all {",
     ["./cmd/patrold", "-run", "TestRunText"]),
    ("run-text-all-lists", "cmd/patrold/run.go",
     "if f.Change == findings.ChangeUnchanged && !all {", "if f.Change == findings.ChangeUnchanged {",
     ["./cmd/patrold", "-run", "TestRunText"]),
    ("run-text-most-first", "cmd/patrold/run.go",
     "cmp.Or(n[b]-n[a], strings.Compare(a, b))", "cmp.Or(0, strings.Compare(a, b))",
     ["./cmd/patrold", "-run", "TestRunTextCountsUnchanged"]),
    ("indent-keeps-empty", "cmd/patrold/indent.go",
     "if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {", "if false {",
     ["./cmd/patrold", "-run", "TestIndentedIsJSONIndent"]),
    ("indent-steps-over-escapes", "cmd/patrold/indent.go",
     "\t\t\t\tif src[j] == '\\\\' {\n\t\t\t\t\tj++\n\t\t\t\t}\n", "",
     ["./cmd/patrold", "-run", "TestIndentedIsJSONIndent"]),
    ("oneshot-leaves-gogc", "cmd/patrold/oneshot_gc.go",
     'getenv("GOGC") != "" || ', "",
     ["./cmd/patrold", "-run", "TestOneShotGCLeavesTheOperatorsSettings"]),
    ("oneshot-least-limit", "cmd/patrold/oneshot_gc.go",
     "max(int64(float64(size)*oneShotLimitPerFile), oneShotMinLimit)", "int64(float64(size)*oneShotLimitPerFile)",
     ["./cmd/patrold", "-run", "TestOneShotLimit"]),
    ("usage-records-only-due", "store/usage.go",
     "WHERE NOT EXISTS (SELECT 1 FROM usage_points WHERE resource_id = j.value AND at > ?2)", "WHERE ?2 = ?2",
     ["./store", "-run", "TestUsageSeries"]),
    ("usage-first-sample-wins", "store/usage.go",
     "ON CONFLICT DO NOTHING", "ON CONFLICT DO UPDATE SET value = excluded.value",
     ["./store", "-run", "TestRecordUsageFirstSampleWins"]),
    ("usage-ready-needs-points", "store/usage.go",
     "AND points >= ?1 AND last_at - first_at >= ?2", "AND ?1 = ?1 AND last_at - first_at >= ?2",
     ["./store", "-run", "TestUsageReady"]),
    ("usage-ready-needs-span", "store/usage.go",
     "AND points >= ?1 AND last_at - first_at >= ?2", "AND points >= ?1 AND ?2 = ?2",
     ["./store", "-run", "TestUsageReady"]),
    ("usage-ready-only-asked", "store/usage.go",
     "\t\tif want[d.ResourceID] {\n\t\t\tout = append(out, d)\n\t\t}\n", "\t\tout = append(out, d)\n",
     ["./store", "-run", "TestUsageReady"]),
    ("usage-ready-candidates-edge", "store/usage.go",
     "WHERE first_at <= (SELECT max(at) FROM usage_points) - ?2", "WHERE first_at < (SELECT max(at) FROM usage_points) - ?2",
     ["./store", "-run", "TestUsageReady"]),
]

# usage_series (migration 00019): each trigger keeps the digest of its
# series, and every change gives the series a version it never had.
SERIES = "migrations/00019_usage_series.sql"
DIGEST = ["./store", "-run", "TestUsageDigestFollowsEveryChange"]
MUTATIONS += [
    ("series-insert-moves-version", SERIES,
     "last_at = max(last_at, excluded.last_at), version = excluded.version;", "last_at = max(last_at, excluded.last_at);", DIGEST),
    ("series-insert-counts", SERIES,
     "DO UPDATE SET points = points + 1, first_at = min(", "DO UPDATE SET points = points, first_at = min(", DIGEST),
    ("series-insert-newest", SERIES,
     "last_at = max(last_at, excluded.last_at), version", "last_at = last_at, version", DIGEST),
    ("series-counter-moves", SERIES,
     "    UPDATE usage_version SET n = n + 1 WHERE id = 1;\n    INSERT INTO usage_series", "    INSERT INTO usage_series", DIGEST),
    ("series-delete-moves-version", SERIES,
     "UPDATE usage_series SET points = points - 1, version = (SELECT n FROM usage_version WHERE id = 1),",
     "UPDATE usage_series SET points = points - 1,", DIGEST),
    ("series-delete-first", SERIES,
     "first_at = coalesce((SELECT min(at) FROM usage_points WHERE resource_id = old.resource_id), first_at),",
     "first_at = first_at,", DIGEST),
    ("series-delete-drops-empty", SERIES,
     "    DELETE FROM usage_series WHERE resource_id = old.resource_id AND points <= 0;\n", "", DIGEST),
    ("series-update-trigger", SERIES,
     "AFTER UPDATE ON usage_points BEGIN", "AFTER UPDATE ON usage_points WHEN 0 BEGIN", DIGEST),
    ("series-update-new-series", SERIES,
     "last_at = (SELECT max(at) FROM usage_points WHERE resource_id = new.resource_id), version = excluded.version;",
     "last_at = last_at, version = excluded.version;", DIGEST),
]

# prompt.PlainMemo: plain texts remembered from run to run.
PLAIN = "model/prompt/plain.go"
MUTATIONS += [
    ("plain-memo-only-plain", PLAIN,
     "\tif !plainASCII(s) {\n\t\treturn SafeText(s, maxRunes)\n\t}\n", "",
     ["./model/prompt", "-run", "TestPlainMemoIsSafeText"]),
    ("plain-memo-within-cap", PLAIN,
     "if m == nil || maxRunes <= 0 || len(s) > maxRunes {", "if m == nil || maxRunes <= 0 {",
     ["./model/prompt", "-run", "TestPlainMemoIsSafeText"]),
    ("plain-memo-forgets-old-rounds", PLAIN,
     "m.last, m.this = m.this, make(map[[2]uint64]struct{}, len(m.this))", "m.last = m.this",
     ["./model/prompt", "-run", "TestPlainMemoRemembersTwoRounds"]),
    ("plain-memo-keeps-met-again", PLAIN,
     "\t\tif _, seen = m.last[k]; seen {\n\t\t\tm.this[k] = struct{}{}\n\t\t}\n", "\t\t_, seen = m.last[k]\n",
     ["./model/prompt", "-run", "TestPlainMemoRemembersTwoRounds"]),
    ("plain-memo-only-when-kept", "patrol/runner.go",
     "\tif opts.KeepPlainText {\n", "\tif true {\n",
     ["./patrol", "-run", "TestRunEndsARoundOfPlainText"]),
    ("run-ends-plain-round", "patrol/runner.go",
     "\tr.plain.Round()\n", "",
     ["./patrol", "-run", "TestRunEndsARoundOfPlainText"]),
]

MUTATIONS += [
    ("safe-memo-keys-the-cap", "patrol/filing.go",
     "\tk := safeKey{s, maxRunes}\n", "\tk := safeKey{s, 0}\n",
     ["./patrol", "-run", "TestMemoObservationIsTheSafeBuild"]),
    ("safe-memo-node-is-safe", "patrol/filing.go",
     "\to.ResourceNode = m.safeName(nodeOf(r))\n", "\to.ResourceNode = m.safe(nodeOf(r), 1<<16)\n",
     ["./patrol", "-run", "TestMemoObservationIsTheSafeBuild"]),
    ("daemon-releases-binary", "daemon/daemon.go",
     "\tif _, err := exepages.Release(); err != nil {", "\tif _, err := exepages.Resident(); err != nil {",
     ["./daemon", "-run", "TestRunGivesTheBinaryBack"]),
    ("exepages-own-binary", "internal/exepages/exepages.go",
     "return m.path == path && ", "return ",
     ["./internal/exepages", "-run", "TestReleasable"]),
    ("exepages-not-writable", "internal/exepages/exepages.go",
     '!strings.Contains(m.perms, "w") && ', "",
     ["./internal/exepages", "-run", "TestReleasable"]),
    ("exepages-no-copied-page", "internal/exepages/exepages.go",
     " && m.anon == 0", "",
     ["./internal/exepages", "-run", "TestReleasable"]),
    ("exepages-unmaps", "internal/exepages/exepages.go",
     "syscall.MADV_RANDOM, syscall.MADV_DONTNEED}", "syscall.MADV_RANDOM}",
     ["./internal/exepages", "-run", "TestReleaseGivesTheBinaryBack"]),
    ("forecast-reads-ready-only", "patrol/forecast.go",
     "series, err := h.UsageSeries(ctx, read)", "series, err := h.UsageSeries(ctx, ids)",
     ["./patrol", "-run", "TestForecastReadsOnlyReadySeries"]),
    ("forecast-refits-changed-series", "patrol/forecast.go",
     "if !ok || !f.digest.Same(d) || d.Last.After(now) {", "if !ok || d.Last.After(now) {",
     ["./patrol", "-run", "TestForecastKeepsFitsUntilTheSeriesChanges"]),
    ("forecast-refits-after-clock-back", "patrol/forecast.go",
     "if !ok || !f.digest.Same(d) || d.Last.After(now) {", "if !ok || !f.digest.Same(d) {",
     ["./patrol", "-run", "TestForecastKeepsFitsUntilTheSeriesChanges"]),
    ("forecast-keeps-only-whole-fits", "patrol/forecast.go",
     "\t\tif !d.Last.After(snap.TakenAt) {\n", "\t\tif true {\n",
     ["./patrol", "-run", "TestForecastKeepsFitsUntilTheSeriesChanges"]),
    ("digest-counts-points", "signals/forecast.go",
     "d.Points == o.Points && d.First.Equal(o.First)", "d.First.Equal(o.First)",
     ["./signals", "-run", "TestSeriesDigestSame"]),
    ("digest-has-version", "signals/forecast.go",
     " && d.Version == o.Version\n", "\n",
     ["./signals", "-run", "TestSeriesDigestSame"]),
]

if __name__ == "__main__":
    run(MUTATIONS)
