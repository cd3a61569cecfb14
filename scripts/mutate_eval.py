#!/usr/bin/env python3
"""Show that every rule of `patrold eval` and of the weak-model hardening
(tool calls written as text) is tested: apply each mutation
below (one rule removed) in turn, run the tests that guard it, and report
whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

REFERENCE = ["./eval", "-run", "TestReferenceModels"]
BARS = ["./eval", "-run", "TestQualifyBars"]
PARSE = ["./eval", "-run", "TestParseNamesTheField"]
LEAK = ["./agent", "-run", "TestLeaked"]
FIT = ["./model/prompt", "-run", "TestFit"]
SMALL = ["./eval", "-run", "TestSmallContextCutsOldToolResults"]
STREAM = ["./eval", "-run", "TestStreamed|TestBrokenStream"]
MASK = ["./model/mask", "./eval", "-run", "TestMask|TestData|FuzzRoundTrip"]
SESSION_MASK = ["./model/mask", "./assistant", "-run", "TestMaskedSession|TestInvented|TestAdd"]

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("recall-counts-matched-only", "eval/eval.go",
     "f.FiledByModel = f.Signals - len(rep.UnmatchedSignals)", "f.FiledByModel = f.Signals", REFERENCE),
    ("refused-claims-counted", "eval/eval.go",
     'return l["outcome"] == "unsupported_claim"', 'return false', REFERENCE),
    ("refused-calls-counted", "eval/eval.go",
     'return l["outcome"] != "ok"', 'return false', REFERENCE),
    ("bar-recall", "eval/eval.go",
     "ov.RecallSpread != nil && ov.RecallSpread.Min < o.Bars.MinRecall", "false", BARS),
    ("bar-unsupported", "eval/eval.go",
     "ov.UnsupportedFiled > o.Bars.MaxUnsupported", "false", BARS),
    ("bar-budget", "eval/eval.go",
     "slices.Contains(f.StatusReasons, patrol.ReasonBudgetExhausted)", "false", BARS),
    ("bar-tokens", "eval/eval.go",
     "o.Bars.MaxTokensPerRun > 0 && f.InputTokens+f.OutputTokens > o.Bars.MaxTokensPerRun", "false", BARS),
    ("bar-context", "eval/eval.go",
     "o.ContextTokens > 0 && f.LargestRequestTokens > o.ContextTokens", "false", BARS),
    ("scenario-ids-exist", "eval/scenario.go",
     "} else if s.snap != nil && !ids[snapshot.CanonicalID(id)] {", "} else if false {", PARSE),
    ("leaked-calls-made", "agent/run.go",
     "if len(r.ToolCalls) == 0 {\n\t\t\t\tr.ToolCalls = leaked", "if false {\n\t\t\t\tr.ToolCalls = leaked", LEAK),
    ("leaked-text-stripped", "agent/run.go", "\t\t\tr.Text = text\n", "\t\t\tr.Text = resp.Text + text[:0]\n", LEAK),
    ("leak-allow-list", "agent/leak.go", "if name == \"\" || !allowed(name) {", "if name == \"\" {", LEAK),
    ("leak-cut-off-is-a-call", "agent/leak.go", "if m == nil || !allowed(m[1]) {", "if true {", LEAK),
    ("miss-rate-by-model", "patrol/metrics.go", "\t\tif rep.Model != nil {", "\t\tif false {", ["./patrol", "-run", "TestMissRateByModel"]),
    ("report-names-the-model", "patrol/pipeline.go", "if set.Model != (ModelRef{}) {", "if false {", ["./patrol", "-run", "TestMissRateByModel"]),
    ("fit-cuts-when-over", "model/prompt/compose.go", "\t\tif over <= 0 {", "\t\tif true {", FIT),
    ("fit-cut-announced", "model/prompt/compose.go", "\t\tif p.cutFrom > 0 {", "\t\tif false {", FIT),
    ("fit-oldest-first", "model/prompt/compose.go",
     'if p.role == model.RoleTool && p.data != "" {', 'if p.role == model.RoleTool && p.data != "" && i == len(cv.parts)-1 {', FIT),
    ("fit-rune-boundary", "model/prompt/compose.go", "for keep > 0 && !utf8.RuneStart(pt.data[keep]) {", "for keep > 0 && !utf8.RuneStart(pt.data[keep]) && false {", FIT),
    ("stages-fit-the-window", "model/prompt/provider.go", "\tif p.Window > 0 {\n\t\trendered", "\tif false {\n\t\trendered", SMALL),
    ("context-tokens-is-the-window", "model/options.go", "\tif o.ContextTokens > 0 {\n\t\tep.ContextWindow", "\tif false {\n\t\tep.ContextWindow",
     ["./model", "-run", "TestContextTokensIsTheEndpointsWindow"]),
    ("context-tokens-minimum", "model/options.go", "} else if o.ContextTokens > 0 && o.ContextTokens < MinContextTokens {", "} else if false {",
     ["./model", "-run", "TestValidateNamesTheKey"]),
    ("openai-streams", "model/openai/openai.go", "\t\t\tif c.Endpoint().Stream {\n\t\t\t\treturn c.stream", "\t\t\tif false {\n\t\t\t\treturn c.stream", STREAM),
    ("anthropic-streams", "model/anthropic/anthropic.go", "\t\t\tif c.Endpoint().Stream {\n\t\t\t\treturn c.stream", "\t\t\tif false {\n\t\t\t\treturn c.stream", STREAM),
    ("openai-stream-usage", "model/openai/stream.go",
     "params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}", "params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(false)}", STREAM),
    ("openai-stream-order", "model/openai/stream.go", "if !acc.AddChunk(st.Current()) {", "if !acc.AddChunk(st.Current()) && false {", STREAM),
    ("anthropic-stream-order", "model/anthropic/stream.go",
     "if err := msg.Accumulate(st.Current()); err != nil {", "if err := msg.Accumulate(st.Current()); err != nil && false {", STREAM),
    ("mask-wired", "patrol/analyst/stage.go", "\tif a.opts.MaskNames {", "\tif false {", MASK),
    ("mask-messages", "model/mask/provider.go", "\t\tmsg.Content = maskText(msg.Content)\n", "", MASK),
    ("mask-history-args", "model/mask/provider.go",
     "c.Arguments = json.RawMessage(maskText(string(c.Arguments)))", "c.Arguments = json.RawMessage(string(c.Arguments))", MASK),
    ("mask-echo-adds-no-term", "model/mask/provider.go", "\t\t\tmaskText = m.MaskEcho", "\t\t\tmaskText = m.Mask", SESSION_MASK),
    ("invented-placeholders", "patrol/analyst/stage.go", "\t\tr.placeholders = masker\n", "", MASK),
    ("invented-not-known", "model/mask/mask.go", "\t\tif m.known(w) {", "\t\tif true {", SESSION_MASK),
    ("session-mask-wired", "assistant/session.go", "if a.opts.MaskNames && a.opts.Provider != nil", "if false && a.opts.Provider != nil", SESSION_MASK),
    ("session-placeholders-checked", "assistant/session.go", "\t\topts.Placeholders = s.env.masker\n", "", SESSION_MASK),
    ("session-learns-reads", "assistant/mask.go", "\te.masker.Add(mask.ForSnapshot(snap, e.finding.ResourceID))\n", "", SESSION_MASK),
    ("session-fails-closed", "assistant/mask.go", "if _, err := e.collect(ctx); err != nil {", "if _, err := e.collect(ctx); err != nil && false {", SESSION_MASK),
    ("session-learns-first", "assistant/mask.go", "\tdone := e.masker == nil || e.learned\n", "\tdone := true\n", SESSION_MASK),
    ("unmask-args", "model/mask/provider.go", "c.Arguments = m.UnmaskJSON(c.Arguments)", "c.Arguments = json.RawMessage(c.Arguments)", MASK),
    ("mask-escaped-forms", "model/mask/mask.go", "\tfor _, form := range forms(term) {", "\tfor _, form := range []string{term} {", MASK),
    ("mask-longest-first", "model/mask/mask.go", "\tm.lengths = append(m.lengths, 0)\n\tcopy(m.lengths[i+1:], m.lengths[i:])\n\tm.lengths[i] = n",
     "\tm.lengths = append(m.lengths, n)", MASK),
    ("exit-1-unqualified", "cmd/patrold/eval.go",
     "if !res.Qualification.Passed {", "if false {", ["./cmd/patrold", "-run", "TestEvalCommand"]),
]

if __name__ == "__main__":
    run(MUTATIONS)
