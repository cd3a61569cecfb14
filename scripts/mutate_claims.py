#!/usr/bin/env python3
"""Show that the rules that check model claims and make outside text safe
are tested: normalise before grounding, binding a figure to the quantity
its text names, free text supporting nothing, number words, severity
agreement, present not overruling detection, the model-finding caps, the
list order and the alert's source label, the outside-text type (its
constructor and its sinks), resource-id validation at decode and the
CLI's escaping. Apply each mutation below in turn, run the
tests that guard it, and report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

GROUND = "model/ground/ground.go"
REPORT = "patrol/analyst/report.go"
ATTACKS = ["./cmd/patrold", "-run", "TestPatrolAttacks"]
SESSION_TEXT = "assistant/ground.go"
FILE_TEXT = "func (e *env) fileText(text string, maxRunes int) (prompt.Text, []string) {"
NOTE_ATTACKS = ["./cmd/patrold"]
ANALYST = ["./patrol/analyst"]

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("normalise-before-ground", REPORT,
     "\tif err := r.ground(resourceID, key, texts...); err != nil {",
     "\traws := make([]string, len(fields))\n\tfor i, f := range fields {\n\t\traws[i] = f.raw\n\t}\n"
     "\tif err := r.ground(resourceID, key, raws...); err != nil {", ATTACKS),
    # Storing other text than what was checked no longer compiles: the
    # observation takes a prompt.Text. These remove the type's guarantee.
    ("sanitiser-bypassed", "model/prompt/text.go",
     "func Safe(s string, maxRunes int) Text { return Text{SafeText(s, maxRunes)} }",
     "func Safe(s string, maxRunes int) Text { return Text{s} }",
     ATTACKS[:1] + ["./model/prompt", "-run", "TestPatrolAttacks|TestTextIsWhatSafeTextMakes"]),
    ("second-text-constructor", "model/prompt/text.go",
     "func SafeName(s string) Text {",
     "func Trusted(s string) Text { return Text{s} }\n\nfunc SafeName(s string) Text {",
     ["./internal/archtest", "-run", "TestOnlyTheSanitiserMakesText"]),
    ("fold-script-digits", "model/prompt/safe.go",
     "\tif d, ok := digitValue(r); ok {", "\tif d, ok := digitValue(r); ok && false {", ATTACKS),
    ("quantity-family-binding", GROUND,
     "if f.Unreadable || f.Family == \"\" || !familiesMatch(f.Family, q) || q.threshold != f.Threshold {",
     "if f.Unreadable || f.Family == \"\" || q.threshold != f.Threshold {", ATTACKS),
    ("threshold-only-when-named", GROUND,
     "if f.Unreadable || f.Family == \"\" || !familiesMatch(f.Family, q) || q.threshold != f.Threshold {",
     "if f.Unreadable || f.Family == \"\" || !familiesMatch(f.Family, q) {", ATTACKS),
    ("free-text-supports-nothing", GROUND,
     "\tcase string:\n\t\tif scope == nil {\n\t\t\treturn\n\t\t}\n",
     "\tcase string:\n\t\tif scope == nil {\n\t\t\treturn\n\t\t}\n\t\tscope.addFreeText(x)\n", ATTACKS),
    ("figure-glued-to-a-word", GROUND,
     "if (glued || gluedAfter) && !(unitOK || (glued && f.Decimals > 0)) {",
     "if glued || gluedAfter {", ATTACKS),
    ("ids-must-be-read", GROUND,
     "\t\tif !f.ids[cl.text] || c.res[cl.text] == nil {", "\t\tif false {", ATTACKS),
    ("node-names-checked", GROUND,
     "\t\tif !c.nodeRead(nodes, cl.text) {", "\t\tif false {", ATTACKS),
    ("recommendation-grounded", REPORT,
     "modelText{args.Recommendation, MaxTextChars}, modelText{args.Evidence, MaxTextChars})",
     "modelText{args.Evidence, MaxTextChars})\n\ttexts = append(texts[:2:2], prompt.Safe(args.Recommendation, MaxTextChars), texts[2])", ATTACKS),
    ("severity-below-signal", REPORT,
     "\t\tif signals.SeverityRank(string(sev)) > signals.SeverityRank(s.Severity) {", "\t\tif false {", ATTACKS),
    ("severity-none-below-trigger", REPORT,
     "\tif !signals.Evaluated(res, typ) {\n\t\t// Detection could not decide", "\tif true {\n\t\t// Detection could not decide", ATTACKS),
    ("present-cannot-overrule", REPORT, "\t\tif r.cleared(f) {", "\t\tif false {", ATTACKS),
    ("cap-per-run", REPORT, "\tif r.reported >= perRun {", "\tif false {", ATTACKS),
    ("cap-per-resource", REPORT, "\tif r.perResource[resourceID] >= perRes {", "\tif false {", ATTACKS),
    ("list-net-first", "store/rows.go",
     "`(CASE WHEN source = 'model' THEN 4 ELSE 0 END + CASE", "`(0 + CASE",
     ["./store", "-run", "TestListPutsTheNetFirst"]),
    ("list-order-documented", "store/rows.go",
     "`(CASE WHEN source = 'model' THEN 4 ELSE 0 END + CASE", "`(CASE WHEN source = 'model' THEN 0 ELSE 4 END + CASE",
     ["./docs", "-run", "TestListOrderDoc"]),
    ("alert-carries-source", "notify/alertmanager.go",
     "\t\tls[\"source\"] = model.LabelValue(f.Source)\n", "", ["./notify", "-run", "TestAlertmanager"]),
    ("id-validated-v1", "snapshot/wire.go",
     "\tif prob := IDProblem(id); prob != \"\" {", "\tif prob := \"\"; prob != \"\" {",
     ["./snapshot", "-run", "TestDecodeRefusesUnfitIDs"]),
    ("parent-validated-v1", "snapshot/wire.go",
     "\tif prob := IDProblem(r.Parent); prob != \"\" {", "\tif prob := \"\"; prob != \"\" {",
     ["./snapshot", "-run", "TestDecodeRefusesUnfitIDs"]),
    ("problem-names-id-escaped", "snapshot/snapshot.go",
     "\tif IDProblem(id) == \"\" {\n\t\treturn id", "\tif true {\n\t\treturn id",
     ["./snapshot", "-run", "TestDecodeRefusesUnfitIDs"]),
    ("source-built-ids-checked", "snapshot/ids.go",
     "prob != \"\" || IDProblem(r.ID) != \"\" || IDProblem(r.Parent) != \"\" {", "prob != \"\" {",
     ["./snapshot", "-run", "TestDropUnfitIDs"]),
    # A session's note and an approval's reason take the same filing path
    # (assistant/ground.go fileText over model/ground).
    ("note-normalised-first", SESSION_TEXT,
     "prompt.SafeText(text, maxRunes), UngroundedMarker)", "text, UngroundedMarker)",
     NOTE_ATTACKS + ["-run", "TestAssistantAttacks/(note|reason)-(fullwidth|folded)"]),
    ("note-grounded", SESSION_TEXT, FILE_TEXT,
     FILE_TEXT + "\n\tif maxRunes == maxNoteRunes {\n\t\treturn prompt.Safe(text, maxRunes), nil\n\t}",
     NOTE_ATTACKS + ["-run", "TestAssistantAttacks/note-"]),
    ("reason-grounded", SESSION_TEXT, FILE_TEXT,
     FILE_TEXT + "\n\tif maxRunes == maxReasonRunes {\n\t\treturn prompt.Safe(text, maxRunes), nil\n\t}",
     NOTE_ATTACKS + ["-run", "TestAssistantAttacks/reason-"]),
    ("note-free-text-supports-nothing", GROUND,
     "\tcase string:\n\t\tif scope == nil {\n\t\t\treturn\n\t\t}\n",
     "\tcase string:\n\t\tif scope == nil {\n\t\t\treturn\n\t\t}\n\t\tscope.addFreeText(x)\n",
     NOTE_ATTACKS + ["-run", "TestAssistantAttacks/(note|reason)-(free-text|timestamp)"]),
    ("check-result-named", GROUND,
     "\tnamed := checkNames(x)\n", "\tnamed := map[string]string(nil)\n",
     NOTE_ATTACKS + ["-run", "TestAssistantAttacks/(note|reason)-borrows-threshold"]),
    ("approval-shows-declaration", "assistant/approval_view.go",
     "v.Declared = DeclaredAction{Description: act.Description, Command:", "v.Declared = DeclaredAction{Command:",
     ["./cmd/patrold", "-run", "TestAssistantAttacks/approval-shows"]),
    ("approval-reason-labelled", "cmd/patrold/approvals.go",
     "\"  model's words (not checked): %s\\n\"", "\"  reason: %s\\n\"",
     ["./cmd/patrold", "-run", "TestAssistantAttacks/approval-shows"]),
    ("cli-escapes-fields", "internal/termsafe/termsafe.go",
     "\t\tcase r == '\\n':\n\t\t\tb.WriteString(`\\n`)\n", "",
     ["./cmd/patrold", "-run", "TestTextOutputEscapesEveryField|TestPatrolAttacks/p32"]),
    ("cli-escapes-live-runes", "internal/termsafe/termsafe.go",
     "\t\tcase live(r) && r < 0x100:", "\t\tcase false:",
     ["./cmd/patrold", "-run", "TestTextOutputEscapesEveryField"]),
    ("list-escapes-title", "cmd/patrold/findings.go",
     "termsafe.Field(f.ResourceID), termsafe.Field(f.Title))", "termsafe.Field(f.ResourceID), f.Title)",
     ["./cmd/patrold", "-run", "TestTextOutputEscapesEveryField"]),
    ("show-escapes-rows", "cmd/patrold/findings.go",
     "r[0]+\":\", termsafe.Field(r[1]))", "r[0]+\":\", r[1])",
     ["./cmd/patrold", "-run", "TestTextOutputEscapesEveryField"]),
]

# addFreeText is what the free-text mutation calls: every figure of a
# string becomes a quantity of every family, as digit runs used to.
FREE_TEXT = '''
func (f *facts) addFreeText(s string) {
	for _, m := range numberPattern.FindAllString(s, -1) {
		if v, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64); err == nil {
			for _, u := range []Unit{UnitNone, UnitPercent, UnitBytes, UnitSeconds, UnitCelsius} {
				f.quantities = append(f.quantities, quantity{name: "free", families: []string{"memory", "disk", "usage", "cpu", "backup", "temperature"}, unit: u, value: v, scale: 1})
			}
		}
	}
}
'''
EXTRA = {"free-text-supports-nothing": FREE_TEXT, "note-free-text-supports-nothing": FREE_TEXT}

if __name__ == "__main__":
    import sys
    only = set(sys.argv[1:])  # names to run (all when none)
    run([m for m in MUTATIONS if not only or m[0] in only], EXTRA)
