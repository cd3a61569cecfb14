#!/usr/bin/env python3
"""Show that the rules guarding what the API answers are tested: slow
and oversized requests, the input a silence or a list query may carry,
and the watch on the database file: apply each mutation below in turn,
run the tests that guard it, and report whether they fail. Restores
every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

SLOW = ["./daemon", "-run", "TestSlowClientsAreCutOff"]
LOSTDB = ["./daemon", "-run", "TestLostDatabaseRefusesMutations"]
NEWDB = ["./daemon", "-run", "TestNewDatabaseBesideHistoryRefused"]
READY = ["./daemon", "-run", "TestReadinessFollowsTheStore"]
INPUT = ["./api", "-run", "TestSilenceGlobsAndTagsChecked|TestMalformedQueriesName"]
DURABLE = ["./daemon", "-run", "TestAnsweredActionIsOnTheStream"]
HOLD = ["./api", "-run", "TestDurableAnswersHoldSuccessUntilStored"]
MARK = ["./store", "-run", "TestCommitMarkNamesTheRowsWritten"]
STORED = ["./bus", "-run", "TestWaitStoredMeansOnTheStream"]
FREEZE = ["./cmd/patrold", "-run", "TestClusterFreezeKeepsAnsweredActions"]

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("unavailable-answers-503", "api/routes.go",
     "\tif errors.As(err, &u) && u.Unavailable() {", "\tif errors.As(err, &u) && false {",
     ["./api", "-run", "TestUnavailableStoreAnswers503"]),
    ("body-read-timeout", "daemon/http.go",
     "ReadTimeout: hc.ReadTimeout, ", "", SLOW),
    ("body-limit-before-auth", "api/decode.go",
     "\t\tif r.ContentLength > max {", "\t\tif false {",
     ["./daemon", "-run", "TestOversizedBodyRefusedBeforeAuth"]),
    ("glob-reserved-refused", "snapshot/glob.go",
     "if i := strings.IndexAny(pattern, globReserved); i >= 0 {", "if i := -1; i >= 0 {", INPUT),
    ("glob-length-capped", "snapshot/glob.go",
     "\tif len(pattern) > MaxIDBytes {", "\tif false {", INPUT),
    ("silence-tags-capped", "findings/silences.go",
     "\tif len(tags) > MaxSilenceTags {", "\tif false {", INPUT),
    ("silence-tags-not-empty", "findings/silences.go",
     "\t\tcase strings.TrimSpace(t) == \"\":", "\t\tcase false:", INPUT),
    ("query-parsed-strictly", "api/findings.go",
     "\tq, err := url.ParseQuery(r.URL.RawQuery)\n", "\tq, err := r.URL.Query(), error(nil)\n", INPUT),
    ("lost-db-refuses-mutations", "daemon/dbwatch.go",
     "\t\t\tif err := d.storeWritable(); err != nil {\n\t\t\t\td.dbLost(err)\n\t\t\t\tapi.WriteNotReady",
     "\t\t\tif err := error(nil); err != nil {\n\t\t\t\td.dbLost(err)\n\t\t\t\tapi.WriteNotReady", LOSTDB),
    ("lost-db-refuses-runs", "daemon/http.go",
     "\tif err := d.storeWritable(); err != nil {\n\t\td.dbLost(err)\n\t\treturn \"\", err",
     "\tif err := error(nil); err != nil {\n\t\td.dbLost(err)\n\t\treturn \"\", err", LOSTDB),
    ("lost-db-logged", "daemon/dbwatch.go",
     "\t\t\t\td.dbLost(err)\n\t\t\t}\n\t\t}\n\t}\n}", "\t\t\t}\n\t\t}\n\t}\n}", LOSTDB),
    ("pool-never-creates-db", "store/store.go", '\t\tq.Set("mode", "rw")\n', "",
     ["./store", "-run", "TestDeletedFileIsNotCreatedAgain"]),
    ("pool-never-opens-another-file", "store/checkpoint.go", "\tif c.opened == nil {\n\t\treturn nil", "\tif true {\n\t\treturn nil",
     ["./store", "-run", "TestReplacedFileIsNeverOpened"]),
    ("new-db-beside-history", "daemon/dbwatch.go", "\tif n == 0 {\n", "\tif n >= 0 {\n", NEWDB),
    ("empty-db-beside-history", "daemon/dbwatch.go", "\t\tif len(runs) > 0 {\n", "\t\tif len(runs) >= 0 {\n", NEWDB),
    ("ready-on-store-run-failure", "daemon/ready.go",
     "if i := slices.IndexFunc(run.Summary.StatusReasons, func(r string) bool { return slices.Contains(storeReasons, r) }); i >= 0 {",
     "if i := slices.IndexFunc(run.Summary.StatusReasons, func(r string) bool { return false && slices.Contains(storeReasons, r) }); i >= 0 {", READY),
    ("ready-names-integrity", "daemon/ready.go",
     'err == nil && strings.Contains(string(full.Report), "malformed")', 'err == nil && false && strings.Contains(string(full.Report), "malformed")', READY),
    ("status-says-ready", "daemon/http.go", "\ts.Ready = len(s.Unready) == 0\n", "\ts.Ready = true\n", READY),
    # An answered mutation is on the stream (cluster mode).
    ("answer-waits-for-stream", "api/durable.go", "\t\t\terr = o.Wait(wctx, seq)\n", "\t\t\t_ = wctx\n", DURABLE),
    ("answer-waits-for-stream-frozen", "api/durable.go", "\t\t\terr = o.Wait(wctx, seq)\n", "\t\t\t_ = wctx\n", FREEZE),
    ("answer-waits-for-stream-unit", "api/durable.go", "\t\t\terr = o.Wait(wctx, seq)\n", "\t\t\t_ = wctx\n", HOLD),
    ("answer-refused-when-deposed", "api/durable.go", "\t\tcase !o.Writer():\n", "\t\tcase false:\n", HOLD),
    ("cluster-answers-wait", "daemon/http.go", "Wait: d.msg.relay.WaitStored,", "Wait: func(context.Context, int64) error { return nil },", DURABLE),
    ("relay-notes-acks", "bus/relay.go", "\t\tr.stored(w.rows[acked-1].Seq)\n", "", STORED),
    ("commit-mark-raised", "store/store.go", "\t\t\tmark.raise(wrote)\n", "", MARK),
    ("statement-marked-in-tx", "store/store.go", "\tif markOf(ctx) != nil {\n", "\tif false {\n", DURABLE),
]

if __name__ == "__main__":
    run(MUTATIONS)
