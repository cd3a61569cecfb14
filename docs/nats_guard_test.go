package docs

import (
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/patrol"
)

// natsDocFacts derives from package contracts what docs/NATS.md must state: the
// subjects and CloudEvents types, the finding and approval events, the
// remediation outcomes and the trigger answer's outcomes.
func natsDocFacts() (words []string, listLines map[string][]string) {
	for _, sub := range [][2]string{
		{contracts.SubjectRunCompleted, contracts.TypeRunCompleted},
		{contracts.SubjectRemediationRequests, contracts.TypeRemediationRequest},
		{contracts.SubjectRemediationOutcomes, contracts.TypeRemediationOutcome},
	} {
		words = append(words, "patrol."+sub[0], sub[1])
	}
	listLines = map[string][]string{}
	for _, e := range contracts.FindingEvents {
		listLines["finding `<event>`"] = append(listLines["finding `<event>`"], string(e))
	}
	for _, e := range contracts.ApprovalEvents {
		listLines["approval `<event>`"] = append(listLines["approval `<event>`"], string(e))
	}
	for _, o := range contracts.Outcomes {
		listLines["`outcome` is one of"] = append(listLines["`outcome` is one of"], string(o))
	}
	const trig = "A trigger answer's outcome is"
	for _, o := range patrol.TriggerOutcomes {
		listLines[trig] = append(listLines[trig], string(o))
	}
	listLines[trig] = append(listLines[trig], contracts.TriggerInvalid, contracts.TriggerUnauthenticated)
	return words, listLines
}

var natsBacktick = regexp.MustCompile("`([a-z_]+)`")

// checkNATSDoc compares the document with the facts in both directions for
// the enumerations: every value in code is listed, and every value listed
// exists in code.
func checkNATSDoc(doc string, words []string, lists map[string][]string) []string {
	var problems []string
	for _, w := range words {
		if !strings.Contains(doc, "`"+w+"`") {
			problems = append(problems, "NATS.md does not name `"+w+"`")
		}
	}
	for marker, want := range lists {
		i := strings.Index(doc, marker)
		if i < 0 {
			problems = append(problems, "NATS.md has no list starting "+marker)
			continue
		}
		// The list runs to the next list item, clause or paragraph.
		para := doc[i+len(marker):]
		for _, end := range []string{"\n- ", ";", "\n\n"} {
			if j := strings.Index(para, end); j >= 0 {
				para = para[:j]
			}
		}
		listed := map[string]bool{}
		for _, m := range natsBacktick.FindAllStringSubmatch(para, -1) {
			listed[m[1]] = true
		}
		inCode := map[string]bool{}
		for _, w := range want {
			inCode[w] = true
			if !listed[w] {
				problems = append(problems, marker+": "+w+" is missing from NATS.md")
			}
		}
		for w := range listed {
			if !inCode[w] {
				problems = append(problems, marker+": NATS.md lists "+w+", which the code does not have")
			}
		}
	}
	return problems
}

func TestNATSDocMatchesCode(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	words, lists := natsDocFacts()
	for _, p := range checkNATSDoc(doc, words, lists) {
		t.Error(p)
	}
}

// TestNATSGuardFailsOnDrift shows the guard reports a change on either side.
func TestNATSGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	words, lists := natsDocFacts()
	grown := map[string][]string{}
	for k, v := range lists {
		grown[k] = append(append([]string(nil), v...), "escalated")
	}
	if len(checkNATSDoc(doc, words, grown)) == 0 {
		t.Error("a new event in code went unnoticed")
	}
	if len(checkNATSDoc(strings.Replace(doc, "`suppressed`", "`silenced`", 1), words, lists)) == 0 {
		t.Error("a renamed event in the doc went unnoticed")
	}
	if len(checkNATSDoc(strings.ReplaceAll(doc, "`patrold.run.completed`", "`patrold.run.done`"), words, lists)) == 0 {
		t.Error("a renamed type in the doc went unnoticed")
	}
}
