#!/usr/bin/env python3
"""Show that the rules of what operator actions publish, how the sinks
follow, and how the shipped schemas hold to the Go types are tested:
apply each mutation below in turn, run the tests that guard it, and
report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

STORE = ["./store", "-run", "TestUndoneActionsArePublished|TestOperatorActions"]
DOCS = ["./docs", "-run", "Schema|Lifecycle|NATS"]
FINDING_SCHEMA = "docs/schemas/patrold.finding.v1.json"

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("undismiss-publishes", "findings/actions.go",
     "pub = &Decision{Publish: true, Event: EventUndismissed, Reason: ReasonUndismissed}", "", STORE),
    ("unsuppress-publishes", "findings/actions.go",
     "pub = &Decision{Publish: true, Event: EventUnsuppressed, Reason: ReasonUnsuppressed}", "", STORE),
    ("undismiss-not-while-suppressed", "findings/actions.go",
     "if f.Active() && !f.Suppressed {", "if f.Active() {", STORE),
    ("unsuppress-not-while-dismissed", "findings/actions.go",
     "if f.Active() && f.DismissedReason == \"\" {", "if f.Active() {", STORE),
    ("undo-on-active-only", "findings/actions.go",
     "if f.Active() && !f.Suppressed {", "if !f.Suppressed {", STORE),
    ("sink-raises-undone-again", "notify/event.go",
     "case contracts.FindingReopened, contracts.FindingUndismissed, contracts.FindingUnsuppressed:",
     "case contracts.FindingReopened:", ["./notify", "-run", "TestAlertmanagerAlertLifecycle"]),
    ("schema-lists-undo-reasons", FINDING_SCHEMA, '"undismissed", "unsuppressed"]', ']', DOCS),
    ("schema-is-additive", FINDING_SCHEMA, '"type": "object",\n  "required"',
     '"type": "object",\n  "additionalProperties": false,\n  "required"', DOCS),
    ("schema-has-approval-reason", "docs/schemas/patrold.approval.v1.json",
     '"reason": {"type": "string"', '"reason_": {"type": "string"', DOCS),
    ("config-fills-sink-defaults", "config/load.go",
     "\tcfg.Notify = cfg.Notify.WithDefaults()\n", "", ["./config", "-run", "TestNotifySection"]),
    ("schema-requires-recurrence", FINDING_SCHEMA,
     '"required": ["finding", "reason", "recurrence"]', '"required": ["finding", "reason"]', DOCS),
]

if __name__ == "__main__":
    run(MUTATIONS)
