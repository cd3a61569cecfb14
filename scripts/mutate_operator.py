#!/usr/bin/env python3
"""Show that the rules an operator meets first are tested: what operator
actions publish, how the sinks follow, how the shipped schemas hold to
the Go types, the CLI's and the daemon's start and stop:
apply each mutation below in turn, run the tests that guard it, and
report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

STORE = ["./store", "-run", "TestUndoneActionsArePublished|TestOperatorActions"]
DOCS = ["./docs", "-run", "Schema|Lifecycle|NATS"]
FINDING_SCHEMA = "docs/schemas/patrold.finding.v1.json"
CLI = ["./cmd/patrold"]
WEB = ["./api", "-run", "TestWeb"]
DIST = ["./internal/dist", "-run", "TestMakeDistInstalls"]
LINKS = ["./daemon", "-run", "TestNotifyInServe"]
PUBLIC = ["./api", "-run", "TestFindingURL|TestPublicURL"]

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
    ("embedded-port-checked-first", "bus/embedded/embedded.go",
     "\tif opts.Port > 0 {\n\t\taddr", "\tif false {\n\t\taddr", ["./bus", "-run", "TestEmbeddedTakenPortFailsAtOnce"]),
    ("clean-close-is-quiet", "bus/bus.go",
     "\t\t\tif err != nil {\n\t\t\t\tb.log.Warn(\"nats disconnected\"", "\t\t\tif true {\n\t\t\t\tb.log.Warn(\"nats disconnected\"",
     ["./bus", "-run", "TestCleanCloseLogsNoWarning"]),
    ("ack-is-idempotent", "findings/actions.go",
     "\t\tif f.AcknowledgedAt != nil {\n", "\t\tif false {\n", CLI + ["-run", "TestAckIsShown"]),
    ("reads-create-no-database", "cmd/patrold/root.go",
     "if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {", "if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && false {", CLI + ["-run", "TestReadCommandsCreateNoDatabase"]),
    ("malformed-ids-refused", "cmd/patrold/root.go",
     "\tif !ok {\n\t\twant :=", "\tif !ok && false {\n\t\twant :=", CLI + ["-run", "TestMalformedIDsExit2"]),
    ("list-shows-the-ack", "cmd/patrold/findings.go",
     "\t\t\tacked = \"yes\"\n", "", CLI + ["-run", "TestAckIsShown"]),
    ("envelope-carries-cursor", "cmd/patrold/contract.go",
     '"next_cursor": next})', '"next_cursor": ""})', CLI + ["-run", "TestListEnvelopeCarriesTheCursor"]),
    ("quickstart-scratch-data-dir", "README.md",
     "PATROLD_DATA_DIR=$(mktemp -d) bin/patrold", "bin/patrold", CLI + ["-run", "TestReadmeQuickStartBesideMakeRun"]),
    ("rules-alert-dead-letters", "deploy/prometheus-rules.yml",
     "increase(patrold_notify_dead_letters_total[30m]) > 0", "increase(patrold_notify_dead_letters_total[30m]) > 5",
     ["./docs", "-run", "TestPrometheusRules"]),
    ("web-refuses-other-sites", "api/web.go",
     'site != "" && site != "same-origin" && site != "none"', 'site == "never"', WEB),
    ("web-refuses-other-origins", "api/web.go", "u.Host != r.Host", "u.Host == \"never\"", WEB),
    ("web-cookie-httponly", "api/web.go", "HttpOnly: true", "HttpOnly: false", WEB),
    ("web-cookie-strict", "api/web.go", "SameSite: http.SameSiteStrictMode", "SameSite: http.SameSiteLaxMode", WEB),
    ("web-pages-need-login", "api/web.go", "return &webSession{}, !w.tokensConfigured()", "return &webSession{}, true", WEB),
    ("web-escapes-html", "api/web.go", '\t"html/template"\n', '\t"text/template"\n', WEB),
    ("web-logout-ends-session", "api/web.go", "delete(w.sessions, sessionKey(c.Value))", "delete(w.sessions, sessionKey(c.Value+\"x\"))", WEB),
    ("dist-strips-the-binary", "Makefile", '-ldflags "-s -w $(LDFLAGS)"', '-ldflags "$(LDFLAGS)"', DIST),
    ("deb-creates-the-user", "internal/dist/files/postinst",
     '\tsystemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} patrold.conf\n', "", DIST),
    ("schema-requires-recurrence", FINDING_SCHEMA,
     '"required": ["finding", "reason", "recurrence"]', '"required": ["finding", "reason"]', DOCS),
    ("alert-link-defaults-to-page", "daemon/standalone_notify.go",
     'o.Sinks[i].Kind == notify.KindAlertmanager && o.Sinks[i].Alertmanager.Link == ""', "false", LINKS),
    ("dataref-wired", "daemon/messaging.go", " DataRef: findingDataRef(cfg.HTTP),", "", LINKS),
    ("dataref-in-envelope", "contracts/envelope.go", '\tif dataref != "" {', "\tif false {", ["./bus", "-run", "TestEnvelopeIsMarshalOfEvent"]),
    ("dataref-findings-only", "contracts/envelope.go", "if !strings.HasPrefix(row.Type, TypeFindingPrefix) {", "if !strings.HasPrefix(row.Type, TypeFindingPrefix) && false {",
     ["./contracts", "-run", "TestFindingID"]),
    ("public-url-used", "api/config.go", '\tif c.PublicURL != "" {\n\t\treturn', '\tif false {\n\t\treturn', PUBLIC),
    ("public-url-wildcard-host", "api/config.go", 'host == "" || ip != nil && ip.IsUnspecified()', "ip != nil && false", PUBLIC),
    ("public-url-path-escaped", "api/config.go", "FindingPagePath + url.PathEscape(id)", "FindingPagePath + id", PUBLIC),
    ("public-url-scheme", "api/config.go", 'case u.Scheme != "http" && u.Scheme != "https":', "case false:", PUBLIC),
    ("public-url-no-credentials", "api/config.go", 'case u.User != nil || u.RawQuery != "" || u.Fragment != "":', "case false:", PUBLIC),
    ("page-shows-transcript", "api/web.go", '\t\t\trow["Transcript"] = t\n', "\t\t\t_ = t\n", WEB),
    ("readme-real-fleet-checked", "README.md", "  kind: proxmox\n  proxmox:\n    url: https://pve1.example:8006", "  kind: proxmox\n  proxmox:\n    url: ftp://pve1.example:8006",
     ["./cmd/patrold", "-run", "TestReadmeRealFleetConfigsCheck"]),
    ("page-lists-children", "api/web.go", '"Explains": children,', '"Explains": children[:0],', WEB),
    ("page-names-parent", "api/web.go", '"InhibitedBy": f.InhibitedBy,', '"InhibitedBy": "",', WEB),
]

if __name__ == "__main__":
    run(MUTATIONS)
