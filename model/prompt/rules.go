package prompt

import (
	"bytes"
	"regexp"
	"strings"
)

// Rule names: the closed label set of patrold_prompt_neutralised_total and
// the <rule> in the "[neutralised:<rule>]" marker. None of them matches a
// rule itself, so neutralising twice changes nothing.
const (
	RuleInstructionOverride = "instruction_override" // ignore/disregard previous instructions
	RuleRoleReassignment    = "role_reassignment"    // you are now, act as, developer mode
	RulePromptDisclosure    = "prompt_disclosure"    // system prompt, reveal your instructions
	RuleRoleTag             = "role_tag"             // <|im_start|>, <system>, [INST], ### system
	RuleFenceMarker         = "fence_marker"         // lines imitating a data fence
	RuleCommandInjection    = "command_injection"    // run rm -rf, restart every host, curl | sh
	RuleToolInjection       = "tool_injection"       // call the tool, mark as resolved, do not report
	RuleExfiltration        = "exfiltration"         // send your credentials/system prompt
	RuleInvisible           = "invisible"            // zero-width, bidi controls, tag characters
)

// rule is one pattern. Rules marked prose run on the view with HTML tags
// removed (an attack may be split across tags); the others run on the view
// that still has them (they match the tags and fences themselves).
type rule struct {
	name  string
	prose bool
	re    *regexp.Regexp
	// keywords prefilter the rule: one of them (lower case) must occur in
	// the view for any pattern of the rule to match, so the regular
	// expression only runs on text that could hold an attack.
	keywords [][]byte
	// needs, when set, prefilter further: one entry per pattern, each the
	// groups of words the pattern cannot match without (one word of every
	// group); the rule runs only when some pattern has all its groups. A
	// word alone is no longer enough: "running" holds the verb "run" but
	// no command to run.
	needs [][][][]byte
}

// withNeeds sets the per-pattern prefilter of r: one entry per pattern of
// the rule, in order, each a list of groups ("a|b" is one group).
func (r rule) withNeeds(patterns ...[]string) rule {
	for _, groups := range patterns {
		var p [][][]byte
		for _, g := range groups {
			var words [][]byte
			for _, w := range strings.Split(g, "|") {
				words = append(words, []byte(w))
			}
			p = append(p, words)
		}
		r.needs = append(r.needs, p)
	}
	return r
}

// withKeywords sets the prefilter of r.
func (r rule) withKeywords(words ...string) rule {
	for _, w := range words {
		r.keywords = append(r.keywords, []byte(w))
	}
	return r
}

// mayMatch reports whether text passes the rule's prefilters: one of its
// keywords, and then (with needs) a word of every group of some pattern.
// sig is text's signature. A word whose byte, or one of whose byte pairs,
// is not in it is not searched for.
func (r rule) mayMatch(text []byte, sig *textSig) bool {
	if len(r.keywords) > 0 && !anyWord(text, sig, r.keywords) {
		return false
	}
	if len(r.needs) == 0 {
		return true
	}
	for _, groups := range r.needs {
		if allGroups(text, sig, groups) {
			return true
		}
	}
	return false
}

// allGroups reports whether text holds a word of every group.
func allGroups(text []byte, sig *textSig, groups [][][]byte) bool {
	for _, g := range groups {
		if !anyWord(text, sig, g) {
			return false
		}
	}
	return true
}

// anyWord reports whether text holds one of words.
func anyWord(text []byte, sig *textSig, words [][]byte) bool {
	for _, w := range words {
		if sig.may(w) && bytes.Contains(text, w) {
			return true
		}
	}
	return false
}

// textSig records which bytes, and (hashed into 512 bits) which pairs of
// adjacent bytes, a text holds: a word can only occur in the text if its
// byte (one long), or each of its pairs, is recorded. One pass over the text
// replaces most of the rules' keyword searches, which nearly all fail.
type textSig struct {
	bytes [4]uint64
	pairs [8]uint64
}

func signature(text []byte) *textSig {
	s := &textSig{}
	for i, c := range text {
		s.bytes[c>>6] |= 1 << (c & 63)
		if i+1 < len(text) {
			h := pairBit(c, text[i+1])
			s.pairs[h>>6] |= 1 << (h & 63)
		}
	}
	return s
}

func pairBit(a, b byte) uint { return (uint(a)*31 + uint(b)) & 511 }

// may reports whether w can occur in the signed text (false: it cannot):
// its byte, or every pair of adjacent bytes in it, is recorded.
func (s *textSig) may(w []byte) bool {
	switch len(w) {
	case 0:
		return true
	case 1:
		return s.bytes[w[0]>>6]&(1<<(w[0]&63)) != 0
	}
	for i := 0; i+1 < len(w); i++ {
		if h := pairBit(w[i], w[i+1]); s.pairs[h>>6]&(1<<(h&63)) == 0 {
			return false
		}
	}
	return true
}

// sep is the separator between words of a phrase: spaces and the
// punctuation used to glue or decorate words (also nothing, since removed
// tags or invisible characters may leave words touching).
const sep = `[\s_*~\-]*`

// phrase builds a pattern from space-separated parts joined by sep.
func phrase(parts ...string) string { return strings.Join(parts, sep) }

func mustRule(name string, prose bool, patterns ...string) rule {
	return rule{name: name, prose: prose, re: regexp.MustCompile(`(?:` + strings.Join(patterns, `)|(?:`) + `)`)}
}

const (
	overrideVerb = `\b(?:ignore|disregard|forget|override|bypass|skip|discard|neglect)`
	determiners  = `(?:(?:all|any|every|the|your|my|of|these|those|such)` + sep + `)*`
	qualifiers   = `(?:(?:previous|prior|above|earlier|preceding|former|foregoing|initial|original|system|existing|safety|current)` + sep + `)+`
	instrNouns   = `(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|polic(?:y|ies)|context|constraints|commands|messages|orders|programming|restrictions)\b`
	strongNouns  = `(?:instructions?|prompts?|guardrails|directives|programming)\b`
	dangerousCmd = `(?:sudo\s+)?(?:rm\s*-[a-z]*[rf]|mkfs|dd\s*if=|shutdown|reboot|halt\b|poweroff|init\s*0|curl\s|wget\s|chmod\s*(?:-r\s*)?777|kill\s*-9|` +
		`systemctl\s*(?:stop|disable|mask|poweroff|reboot)|qm\s*(?:destroy|stop|shutdown)|pct\s*(?:destroy|stop)|zfs\s*destroy|` +
		`zpool\s*(?:destroy|labelclear)|wipefs|pvesh\s*(?:delete|set)|drop\s*(?:table|database)|truncate\s*table)`
	massTargets = `(?:hosts?|nodes?|vms?|guests?|servers?|containers?|machines?|disks?|pools?|datastores?|storages?|instances?|cluster|backups?|snapshots?)\b`
)

// dangerousWords holds a word of every alternative of dangerousCmd (a
// group of withNeeds).
const dangerousWords = "rm|mkfs|dd|shutdown|reboot|halt|poweroff|init|curl|wget|chmod|kill|systemctl|qm|pct|zfs|zpool|wipefs|pvesh|drop|truncate"

// rules is the neutraliser's rule set, in reporting order.
var rules = []rule{
	mustRule(RuleInstructionOverride, true,
		overrideVerb+sep+determiners+qualifiers+`(?:\w+`+sep+`)?`+instrNouns,
		overrideVerb+sep+determiners+strongNouns,
		overrideVerb+sep+`(?:(?:all|any|every|your)`+sep+`)+(?:rules|guidelines|polic(?:y|ies)|constraints|restrictions|safety)\b`,
		`\b(?:ignore|disregard|forget)`+sep+`(?:(?:all|everything|anything)`+sep+`)?(?:(?:of|that)`+sep+`)?(?:the`+sep+`)?(?:above|said\b|before\b)`,
		phrase(`\bforget`, `(?:everything|all)`, `(?:you|that|above|before|previous)`),
	).withKeywords("ignore", "disregard", "forget", "override", "bypass", "skip", "discard", "neglect"),
	mustRule(RuleRoleReassignment, true,
		phrase(`\byou`, `are`, `now`, `(?:a|an|the|my|dan|root|admin|unrestricted|jailbroken|free|no`+sep+`longer|acting|operating|in`+sep+`(?:developer|god|jailbreak|unrestricted|dan)`+sep+`mode)\b`),
		phrase(`\bfrom`, `now`, `on`)+`[\s,]*`+`(?:you|your)\b`,
		phrase(`\bact`, `as`, `(?:if`+sep+`you|an?`+sep+`(?:ai|assistant|admin(?:istrator)?|root|hacker|unrestricted|different|new|system|developer|evil|jailbroken)|root|sysadmin|the`+sep+`(?:system|admin(?:istrator)?|assistant|developer|operator))\b`),
		phrase(`\bpretend`, `(?:to`+sep+`be|you`+sep+`are|that`+sep+`you)\b`),
		phrase(`\b(?:developer|dan|jailbreak|god|unrestricted)`, `mode\b`),
		phrase(`\bnew`, `(?:system`+sep+`)?(?:instructions?|persona|directives?|role)`)+`\s*[:!]`,
		phrase(`\byour`, `new`, `(?:instructions?|role|task|goal|persona|orders)\b`),
		phrase(`\b(?:i`+sep+`am|this`+sep+`is)`, `your`, `(?:developer|creator|admin(?:istrator)?|owner|operator|master)\b`),
	).withKeywords("you", "now", "act", "pretend", "mode", "new"),
	mustRule(RulePromptDisclosure, true,
		phrase(`\bsystem`, `(?:prompt|instructions?)\b`),
		phrase(`\b(?:reveal|print|show|repeat|output|leak|dump|display|recite|echo|tell`+sep+`me)`, `(?:me`+sep+`)?your`, `(?:(?:full|entire|initial|original|hidden|secret|exact)`+sep+`)*(?:system`+sep+`)?(?:prompt|instructions|policy|rules|guidelines)\b`),
		phrase(`\b(?:reveal|print|show|repeat|output|leak|dump|display|recite|echo|tell`+sep+`me)`, `(?:me`+sep+`)?the`, `(?:(?:full|entire|initial|original|hidden|secret|exact)`+sep+`)*(?:prompt|instructions)\b`),
	).withKeywords("prompt", "instruction", "polic", "rules", "guideline"),
	mustRule(RuleRoleTag, false,
		`<\|[a-z_]{2,30}\|>`,
		`<\s*/?\s*(?:system|assistant|user|human|instructions?|sys|tool_?(?:call|result|use)s?|function_?(?:call|result)s?|admin|developer|prompt|im_start|im_end)\s*>`,
		`\[/?(?:inst|sys|system)\]`,
		`<<\s*/?sys\s*>>`,
		`(?m)^[ \t]*#{2,}[ \t]*(?:system|assistant|user|instructions?|response|human)[ \t]*:?[ \t]*$`,
		`(?m)^[ \t]*(?:assistant|human)[ \t]*:`,
		`(?m)^[ \t]*system[ \t]*:[ \t]*(?:you|ignore|disregard|new|from|act|override|the[ \t]+assistant)`,
	).withKeywords("<", "[", "#", "assistant", "human", "system"),
	mustRule(RuleFenceMarker, false,
		`<{3,}[^\n]{0,100}?>{3,}`,
		`<{3,}\s*/?\s*(?:end|untrusted|begin|data)`,
		"(?m)^[ \\t]*(?:-{3,}|={3,}|\\*{3,}|#{3,}|~{3,}|`{3,})[ \\t]*(?:end|begin|start|close|open)[ \\t]*(?:of[ \\t]*)?(?:untrusted|data|context|tool|system|instructions?|input|document|fence|quote|user)",
		phrase(`\bend`, `(?:of`+sep+`)?(?:untrusted|tool`+sep+`(?:output|result)|fenced)`)+`\b`,
	).withKeywords("<<<", "untrusted", "fenced", "tool", "---", "===", "***", "###", "~~~", "```"),
	mustRule(RuleCommandInjection, true,
		`\b(?:run|execute|exec|invoke|type|enter|issue)`+sep+`(?:(?:the|this|these|following)`+sep+`)*(?:(?:shell`+sep+`)?(?:commands?|cmd|script)`+sep+`)?[:\x60'"]*\s*`+dangerousCmd+`[^\n;|&]{0,120}`,
		`\b(?:restart|reboot|shut`+sep+`down|shutdown|stop|destroy|delete|remove|wipe|kill|format|erase|power`+sep+`off|poweroff|reinstall|suspend)`+sep+`(?:every|all|each)`+sep+`(?:(?:of`+sep+`)?the`+sep+`)?(?:\w+`+sep+`)?`+massTargets,
		`\b(?:curl|wget)\s[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b`,
		`\brm\s*-(?:rf|fr|r\s*-f|f\s*-r)\s*(?:/|~|\*)(?:\s|$|\*)`,
		`--no-preserve-root`,
		`:\(\)\s*\{\s*:\|:&\s*\};:`,
		`\bdd\s*if=/dev/(?:zero|random|urandom)\s*of=/dev/`,
	).withKeywords("run", "exec", "invoke", "type", "enter", "issue", "restart", "reboot", "shut", "stop", "destroy", "delete", "remove", "wipe", "kill", "format", "erase", "power", "reinstall", "suspend", "curl", "wget", "rm", "--no-preserve", ":(", "dd").
		withNeeds(
			[]string{"run|exec|invoke|type|enter|issue", dangerousWords},
			[]string{"restart|reboot|shut|stop|destroy|delete|remove|wipe|kill|format|erase|power|reinstall|suspend", "every|all|each"},
			[]string{"curl|wget", "|"},
			[]string{"rm"},
			[]string{"--no-preserve-root"},
			[]string{":("},
			[]string{"dd", "if="},
		),
	mustRule(RuleToolInjection, true,
		phrase(`\b(?:call|invoke|trigger)`, `(?:the`+sep+`)?(?:tool|function)\b`),
		phrase(`\b(?:call|invoke|trigger|use)`, `(?:the`+sep+`)?[a-z]+_[a-z_]+`, `(?:tool|function)\b`),
		phrase(`\bmark`, `(?:this|these|it|them|all|every|the)`, `(?:\w+`+sep+`)?(?:(?:findings?|alerts?|issues?|problems?|resources?)`+sep+`)?as`, `(?:resolved|healthy|fixed|ok|fine|dismissed|false`+sep+`positives?|not`+sep+`an?`+sep+`issue)\b`),
		phrase(`\b(?:dismiss|resolve|suppress|silence|close)`, `(?:all|every|any)`, `(?:\w+`+sep+`)?(?:findings?|alerts?|issues?|warnings?)\b`),
		phrase(`\b(?:do`+sep+`not|don'?t|never)`, `(?:report|file|flag|mention|raise|alert`+sep+`(?:on|about))`, `(?:this|these|that|any|the|it)\b`),
		phrase(`\breport`, `(?:that`+sep+`)?(?:everything|all`+sep+`(?:systems|hosts|resources)|the`+sep+`(?:fleet|system|cluster))`, `(?:is|are)`, `(?:healthy|fine|ok|okay|normal|good)\b`),
		// The first two patterns end in tool|function, so those words (not
		// call/invoke/trigger/use, which plain text is full of: "used")
		// prefilter them.
	).withKeywords("tool", "function", "mark", "dismiss", "resolve", "suppress", "silence", "close", "not", "don", "never", "report").
		withNeeds(
			[]string{"call|invoke|trigger", "tool|function"},
			[]string{"call|invoke|trigger|use", "_", "tool|function"},
			[]string{"mark", "as", "resolved|healthy|fixed|ok|fine|dismissed|false|not"},
			[]string{"dismiss|resolve|suppress|silence|close", "all|every|any", "finding|alert|issue|warning"},
			[]string{"not|don|never", "report|file|flag|mention|raise|alert"},
			[]string{"report", "everything|all|the", "is|are", "healthy|fine|ok|normal|good"},
		),
	mustRule(RuleExfiltration, true,
		phrase(`\b(?:send|post|upload|exfiltrate|forward|email|leak|transmit)`, `(?:all`+sep+`)?(?:(?:of`+sep+`)?(?:your|the|my|any)`+sep+`)?(?:system`+sep+`prompt|instructions|api`+sep+`keys?|credentials|secrets?|tokens?|passwords?|private`+sep+`keys?|ssh`+sep+`keys?|env(?:ironment)?`+sep+`variables?)\b`),
	).withKeywords("send", "post", "upload", "exfiltrate", "forward", "email", "leak", "transmit"),
}

// Rules returns the rule names in reporting order.
func Rules() []string {
	names := make([]string, 0, len(rules)+1)
	for _, r := range rules {
		names = append(names, r.name)
	}
	return append(names, RuleInvisible)
}
