#!/usr/bin/env python3
"""Show that every rule of cluster mode and of the standalone workers is
tested: apply each mutation below (one rule removed) in turn, run the tests
that guard it, and report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("commit-wakes-relay", "daemon/daemon.go",
     "\td.store.OnCommit(d.msg.kick)\n", "",
     ["./daemon", "-run", "TestOperatorActionPublishedOnCommit"]),
    ("tx-commit-notifies", "store/store.go",
     "\t\t\tmark.raise(wrote)\n\t\t}\n\t\ts.notifyCommit()\n",
     "\t\t\tmark.raise(wrote)\n\t\t}\n",
     ["./daemon", "-run", "TestOperatorActionPublishedOnCommit"]),
    ("fence-lower-epoch", "store/apply.go",
     "\t\tcase c.Epoch < uint64(epoch):\n", "\t\tcase false:\n",
     ["./cluster", "-run", "TestDeposedWriterIsFenced"]),
    ("epoch-marker-carries-epoch", "store/capture.go",
     "contracts.StateChange{Origin: origin, Epoch: epoch, Table: contracts.SkipTable, Op: contracts.OpEpoch})",
     "contracts.StateChange{Origin: origin, Table: contracts.SkipTable, Op: contracts.OpEpoch})",
     ["./cluster", "-run", "TestDeposedWriterIsFenced"]),
    ("numbered-changes-gap", "store/apply.go",
     "if c.N > 0 && !fenced && c.N != uint64(appliedN)+1 {", "if false {",
     ["./cluster", "-run", "TestReplicaNoticesMissingChanges"]),
    ("touch-replicates-as-one", "store/capture.go",
     "\tif capture != 1 || applying != 0 {\n\t\treturn update()", "\tif true {\n\t\treturn update()",
     ["./cluster", "-run", "TestRedetectionReplicatesAsOneTouch"]),
    ("touch-applied", "store/apply.go",
     "\t\t\tif c.Op == contracts.OpTouch {\n\t\t\t\tapply = applyTouch\n\t\t\t}\n", "",
     ["./cluster", "-run", "TestRedetectionReplicatesAsOneTouch"]),
    ("gap-releases-lease", "cluster/member.go",
     "\t\tif err := r.yield(); err != nil {", "\t\tif err := error(nil); err != nil {",
     ["./daemon", "-run", "TestGappedInstanceReleasesTheLease"]),
    ("divergence-reseeds", "cluster/member.go",
     "\tr.f.setDiverged(div)\n\tr.log.Error(\"unsent", "\tr.log.Error(\"unsent",
     ["./cluster", "-run", "TestRestartedWriterReseedsItself"]),
    ("stall-resubscribes", "cluster/follower.go",
     "\t\tf.resubscribes++\n\t\trestart := f.restart\n", "\t\tf.resubscribes++\n\t\trestart := context.CancelFunc(nil)\n",
     ["./cluster", "-run", "TestStalledConsumerIsReplaced"]),
    ("wal-bounded-while-applying", "store/apply.go",
     "\ts.boundWAL(ctx)\n\treturn result, nil", "\treturn result, nil",
     ["./store", "-run", "TestWALStaysBoundedWhileApplying"]),
    ("apply-error-reported", "cluster/follower.go",
     "\tf.applyErr = err\n", "",
     ["./cluster", "-run", "TestReplicaThatCannotApplySaysSo"]),
    ("seed-copy-leaves-outbox", "store/seed.go",
     '\t\t\t"DELETE FROM outbox",\n', '\t\t\t"SELECT 1",\n',
     ["./daemon", "-run", "TestDBSeed"]),
    ("request-consumer-at-start", "daemon/messaging.go",
     "\tif err := tr.EnsureRequestConsumer(ctx, requests); err != nil {\n\t\treturn fail(err)\n\t}\n",
     "\t_ = requests\n",
     ["./daemon", "-run", "TestStandaloneWorker"]),
    ("writer-serves-sessions", "daemon/messaging.go",
     "\t\tm.goRun(func() error { m.serveSessions(runCtx, d); return nil })\n", "",
     ["./daemon", "-run", "TestStandaloneWorker"]),
    ("session-end-waits-for-store", "assistant/outcome.go",
     "if err == nil || !errors.Is(err, ErrStoreUnavailable) ||", "if true ||",
     ["./assistant", "-run", "TestSessionEndWaitsForTheStore"]),
    ("standby-forwards-reload", "cluster/forward.go",
     ' && r.URL.Path != "/-/reload"', "",
     ["./cluster", "-run", "TestServedHere"]),
    ("bus-no-reconnect-buffer", "bus/bus.go",
     "\t\tnats.ReconnectBufSize(-1),\n", "",
     ["./bus", "-run", "TestBusKeepsNoReconnectBuffer"]),
    ("sessions-in-day-budget", "store/runs.go",
     "(SELECT coalesce(sum(cost_usd), 0) FROM remediation_sessions WHERE started_at >= ?)", "0 * length(?)",
     ["./patrol/analyst", "-run", "TestSessionSpendCountsInTheRunsDayBudget"]),
]


if __name__ == "__main__":
    run(MUTATIONS)
