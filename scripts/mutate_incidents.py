#!/usr/bin/env python3
"""Show that every rule of incident handling is tested: inhibition (each
rule, the severity a full storage needs, held findings kept from the
stream and from investigation, release by the sweep) and the scope of a
scoped run (nothing outside it resolved, nothing outside it patrolled),
the trigger limits and coalescing, the Alertmanager hook's guards and
the NATS trigger subject's (verified, scope-checked, the writer only).
Each mutation removes one rule; its tests must fail."""
from mutations import run

FINDINGS = ["./findings", "-run", "TestInhibitRules|TestGateRefusesInhibited"]
STREAM = ["./daemon", "-run", "TestInhibition"]
SCOPE = ["./patrol", "-run", "TestScopedRun"]
TRIGGER = ["./patrol", "-run", "TestTriggerLimitsAndCoalescing"]
NATS_TRIGGER = ["./daemon", "-run", "TestNATSTrigger"]
NETWORK = ["./patrol", "-run", "TestUnroutableNetworkHoldsItsGuests"]
PVE_PARENTS = ["./snapshot/proxmox", "-run", "TestGuestStorageParents|TestFullVolumeStorageHoldsItsGuests|TestConfigStorages"]

MUTATIONS = [
    ("inhibit-full-needs-critical", "findings/inhibit.go",
     "(r.minSeverity != \"\" && parent.Severity.Rank() < r.minSeverity.Rank())",
     "false", FINDINGS),
    ("inhibit-first-parent-only", "findings/inhibit.go",
     "\t\t\t\to.InhibitedBy = id\n\t\t\t\tbreak",
     "\t\t\t\to.InhibitedBy = id", FINDINGS),
    ("held-published", "store/commit.go",
     "in.Policy.Decide(*c, c.Finding.Held(), in.Now)",
     "in.Policy.Decide(*c, c.Finding.Silenced, in.Now)", STREAM),
    ("held-investigated", "findings/gate.go",
     "f.DismissedReason != \"\" || f.Held():",
     "f.DismissedReason != \"\" || f.Silenced:", FINDINGS),
    ("parent-count", "store/commit.go",
     "c.Finding.Inhibits = explained[c.Finding.ID]",
     "_ = explained", STREAM),
    ("sweep-releases", "store/sweep.go",
     "if orphans[f.ID] {", "if false && orphans[f.ID] {", STREAM),
    ("scope-resolves-nothing-else", "findings/run.go",
     "if in.InScope != nil && !in.InScope(snapshot.CanonicalID(f.ResourceID)) {",
     "if false && in.InScope != nil && !in.InScope(snapshot.CanonicalID(f.ResourceID)) {", SCOPE),
    ("scope-absent-is-outside", "patrol/scope.go",
     "return out, present", "return out, scope", SCOPE),
    ("run-event-scope", "patrol/filing.go",
     "Errors: rep.Errors, Scope: rep.Scope,", "Errors: rep.Errors,", SCOPE),
    ("scope-filters-snapshot", "patrol/scope.go",
     "\t\tif scope[snap.Resources[i].ID] {\n\t\t\tout.Resources",
     "\t\tif true {\n\t\t\tout.Resources", SCOPE),
    ("trigger-per-resource", "patrol/trigger.go",
     "(!ok || now.Sub(at) >= t.opts.PerResource)", "(!ok || now.Sub(at) >= 0)", TRIGGER),
    ("trigger-global", "patrol/trigger.go",
     "len(fresh) == 0 || (!t.lastRun.IsZero() && now.Sub(t.lastRun) < t.opts.Global)", "len(fresh) == 0", TRIGGER),
    ("trigger-coalesces", "patrol/trigger.go",
     "\tcase errors.Is(err, ErrBusy):\n\t\tfor", "\tcase false:\n\t\tfor", TRIGGER),
    ("trigger-run-ended", "patrol/trigger.go",
     "\tif len(t.pending) == 0 {\n\t\treturn \"\", nil", "\tif true {\n\t\treturn \"\", nil", TRIGGER),
    ("hook-skips-own-alerts", "api/hooks.go",
     "a.Status != \"firing\" || a.Labels[\"finding_id\"] != \"\"", "a.Status != \"firing\"",
     ["./api", "-run", "TestAlertmanagerHook"]),
    ("trigger-token-hooks-only", "api/auth.go",
     "case need == ScopeRead && who.scope == ScopeTrigger:", "case false:", ["./api", "-run", "TestAlertmanagerHook"]),
    ("nats-trigger-verified", "bus/trigger.go",
     "\tif err := b.guard.CheckNow(contracts.StemTrigger, m); err != nil {", "\tif err := error(nil); err != nil {", NATS_TRIGGER),
    ("nats-trigger-scope-checked", "daemon/trigger.go",
     "\tif err := patrol.CheckScope(req.Resources, req.Reason); err != nil {\n\t\treturn contracts.TriggerAnswer",
     "\tif err := error(nil); err != nil {\n\t\treturn contracts.TriggerAnswer", NATS_TRIGGER),
    ("nats-trigger-writer-only", "daemon/messaging.go",
     "\t\tm.goRun(func() error { m.serveTriggers(runCtx, d); return nil })\n\t}",
     "\t}\n\tm.goRun(func() error { m.serveTriggers(runCtx, d); return nil })", NATS_TRIGGER),
    ("nats-trigger-sender-dials", "daemon/trigger.go",
     "\tif err := b.Dial(); err != nil {", "\tif err := b.Start(ctx); err != nil {",
     ["./daemon", "-run", "TestTriggerSenderOnARestrictedUser"]),
    ("proxmox-guest-storage-parents", "snapshot/proxmox/collect.go",
     "\t\t\tr.Parents = where.of(g.Node, res.configs[vmid(g)].storages())\n", "\t\t\t_ = where\n", PVE_PARENTS),
    ("proxmox-cdrom-no-volume", "snapshot/proxmox/guestconfig.go",
     "if p[\"media\"] == \"cdrom\" {", "if false {", PVE_PARENTS),
    ("proxmox-shared-by-name", "snapshot/proxmox/collect.go",
     "\t\t\tid, ok = x[\"\\x00\"+n]", "\t\t\tid, ok = \"\", false", PVE_PARENTS),
    ("kept-held-by-node-offline", "findings/inhibit.go",
     "var keptBy = []string{string(signals.TypeNodeOffline)}", "var keptBy = []string{}",
     ["./daemon", "-run", "TestNodeOfflineHoldsMissingMetrics"]),
    ("kept-only-unknown", "findings/inhibit.go",
     "\t\t\t\t\t\tif unknown(f) {", "\t\t\t\t\t\tif true {", ["./findings", "-run", "TestHolder"]),
    ("kept-hold-recorded", "store/commit.go",
     "} else if c, ok := in.Hold(f); ok {", "} else if c, ok := in.Hold(f); ok && false {",
     ["./daemon", "-run", "TestNodeOfflineHoldsMissingMetrics"]),
    ("kept-hold-in-scope", "findings/run.go",
     "\tif in.InScope != nil && !in.InScope(snapshot.CanonicalID(f.ResourceID)) {\n\t\treturn Change{}, false",
     "\tif false {\n\t\treturn Change{}, false", ["./findings", "-run", "TestHolder"]),
    ("kept-hold-cleared", "findings/run.go",
     "\tif by == \"\" && f.InhibitedBy == \"\" {", "\tif by == \"\" {", ["./findings", "-run", "TestHolder"]),
    ("pipeline-holds", "patrol/pipeline.go",
     "return check(f) == findings.CheckUnknown }", "return f == nil }", ["./daemon", "-run", "TestNodeOfflineHoldsMissingMetrics"]),
    ("network-parent", "patrol/inhibit.go",
     "return append(slices.Clip(r.parents), nets[id]...)", "return slices.Clip(r.parents)", NETWORK),
    ("network-finding-filed", "patrol/pipeline.go",
     "obs = append(obs, networkUnroutable(u))", "_ = u", NETWORK),
    ("network-finding-clears", "patrol/pipeline.go",
     "\t\t\tif probed {\n\t\t\t\treturn findings.CheckCleared", "\t\t\tif false {\n\t\t\t\treturn findings.CheckCleared", NETWORK),
    ("pipeline-inhibits", "patrol/pipeline.go",
     "\tfindings.Inhibit(obs, parents)\n", "", ["./patrol", "-run", "TestInhibitedFindingsCounted"]),
]

if __name__ == "__main__":
    import sys
    only = sys.argv[1:]
    run([m for m in MUTATIONS if not only or m[0] in only])
