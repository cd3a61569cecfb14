#!/usr/bin/env python3
"""Show that every rule of the store's caches (active findings, outbox
windows) is tested:
apply each mutation below (one rule removed) in turn, run the tests that
guard it, and report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

CACHE_TESTS = ["./store", "-run", "TestActiveCache"]
RARE = ["./store", "-run", "TestRareColumnsReadBack"]
MIGRATION = "migrations/00012_steady_runs.sql"


def trigger(name):
    """The text of one findings_version trigger in the migration."""
    src = open(MIGRATION).read()
    start = src.index("-- +goose StatementBegin\nCREATE TRIGGER " + name + " ")
    end = src.index("-- +goose StatementEnd\n", start) + len("-- +goose StatementEnd\n")
    return src[start:end]


# (name, file, original, mutated, test args)
MUTATIONS = [
    ("cache-checks-version", "store/active_cache.go",
     "if st.byID == nil || st.version != v {", "if st.byID == nil || (st.version != v && false) {", CACHE_TESTS),
    ("version-counts-updates", MIGRATION, trigger("findings_version_update"), "", CACHE_TESTS),
    ("version-counts-inserts", MIGRATION, trigger("findings_version_insert"), "", CACHE_TESTS),
    ("version-counts-deletes", MIGRATION, trigger("findings_version_delete"), "", CACHE_TESTS),
    ("touch-moves-version", "store/commit.go",
     '\t_, err := tx.ExecContext(ctx, "UPDATE findings_version SET n = n + 1 WHERE id = 1")\n\treturn err',
     "\treturn nil", CACHE_TESTS),
    ("cache-takes-the-commit", "store/active_cache.go",
     "\t\t\tm[f.ID] = asStored(*f)\n", "", CACHE_TESTS),
    ("cache-drops-the-resolved", "store/active_cache.go",
     "\t\t\tdelete(m, f.ID)\n", "", CACHE_TESTS),
    ("cold-keys-keep-the-rows", "store/rows.go",
     "\t\ts.active.put(st)\n", "", ["./store", "-run", "TestColdActiveKeysKeepTheRowsForTheCommit"]),
    ("touch-sets-times-raised", "store/commit.go",
     "times_raised = j.value", "times_raised = times_raised + 1",
     ["./store", "-run", "TestTouchBringsADriftedReplicaBack"]),
    # The relay's window and mark of an unbroken run of seqs.
    ("outbox-span-held-whole", "store/outbox_cache.go",
     " || c.rows[i+n-1].Seq != first+int64(n)-1 {", " {", ["./store", "-run", "TestPendingEventsSpanAnotherWritersRow"]),
    ("mark-span-refuses-a-row-below", "store/outbox_store.go",
     'markSentUnlessSQL + "seq < ?3)"', 'markSentUnlessSQL + "?3 < 0)"',
     ["./store", "-run", "TestMarkSentWritesOneMark"]),
    ("built-facts-follow-membership", "store/commit.go",
     "\t\tif sameMembers { // what was built from the members still holds", "\t\tif sameMembers || true {", CACHE_TESTS),
    ("a-read-builds-keys-again", "store/active_cache.go",
     "\t\tst = activeState{byID: make(map[string]findings.Finding, len(read))}",
     "\t\tst = activeState{byID: make(map[string]findings.Finding, len(read)), keyList: st.keyList}",
     ["./store", "-run", "TestActiveKeysSeeAnotherProcessesSwap"]),
    ("a-read-orders-again", "store/active_cache.go",
     "\t\tst = activeState{byID: make(map[string]findings.Finding, len(read))}",
     "\t\tst = activeState{byID: make(map[string]findings.Finding, len(read)), order: st.order}",
     ["./store", "-run", "TestActiveKeysSeeAnotherProcessesSwap"]),
    # A read packs the rare columns (NULL when all hold their default).
    ("rare-default-per-column", "store/rows.go",
     '{"resolve_note", "= \'\'"}', '{"resolve_note", "= resolve_note"}', RARE),
    ("rare-packs-bytes", "store/rows.go",
     '"octet_length("+v+")', '"length("+v+")', RARE),
    ("rare-flags-strict", "store/rows.go",
     '\t\tcase "1":\n', '\t\tcase "1", "2":\n', RARE),
]

if __name__ == "__main__":
    run(MUTATIONS)
