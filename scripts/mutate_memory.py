#!/usr/bin/env python3
"""Show that every rule of what a run leaves behind is tested: the memory
a daemon gives back after each run, the one-shot run's report (text
counts, JSON printed as the indenting encoder would) and the usage
history a run touches (only due points written, only ready series read),
and the run's memo of sanitised text (what prompt.Safe would give).
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
     "HAVING count(*) >= ?1 AND max(at) - min(at) >= ?2", "HAVING ?1 = ?1 AND max(at) - min(at) >= ?2",
     ["./store", "-run", "TestUsageReady"]),
    ("usage-ready-needs-span", "store/usage.go",
     "HAVING count(*) >= ?1 AND max(at) - min(at) >= ?2", "HAVING count(*) >= ?1 AND ?2 = ?2",
     ["./store", "-run", "TestUsageReady"]),
    ("usage-ready-only-asked", "store/usage.go",
     "\t\tif want[id] {\n\t\t\tout = append(out, id)\n\t\t}\n", "\t\tout = append(out, id)\n",
     ["./store", "-run", "TestUsageReady"]),
    ("usage-ready-candidates-edge", "store/usage.go",
     "WHERE at <= (SELECT max(at) FROM usage_points) - ?2", "WHERE at < (SELECT max(at) FROM usage_points) - ?2",
     ["./store", "-run", "TestUsageReady"]),
    ("safe-memo-keys-the-cap", "patrol/filing.go",
     "\tk := safeKey{s, maxRunes}\n", "\tk := safeKey{s, 0}\n",
     ["./patrol", "-run", "TestMemoObservationIsTheSafeBuild"]),
    ("safe-memo-node-is-safe", "patrol/filing.go",
     "\to.ResourceNode = m.safeName(nodeOf(r))\n", "\to.ResourceNode = m.safe(nodeOf(r), 1<<16)\n",
     ["./patrol", "-run", "TestMemoObservationIsTheSafeBuild"]),
    ("forecast-reads-ready-only", "patrol/forecast.go",
     "series, err := h.UsageSeries(ctx, ready)", "series, err := h.UsageSeries(ctx, append(ready[:0:0], ids...))",
     ["./patrol", "-run", "TestForecastReadsOnlyReadySeries"]),
]

if __name__ == "__main__":
    run(MUTATIONS)
