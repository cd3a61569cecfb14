package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/notify"
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

// roleDocNames are the names the role table shows: the defaults and one
// notify sink "<sink>" with one subject "<subject>" and a replay.
func roleDocNames(filters ...string) embedded.Names {
	if len(filters) == 0 {
		filters = []string{"<subject>"}
	}
	return embedded.Names{Prefix: contracts.DefaultSubjectPrefix, Stream: contracts.DefaultStreamName, LeaseBucket: contracts.DefaultLeaseBucket,
		WorkQueue: assistant.DefaultDurable, Outcomes: daemon.OutcomesDurable,
		Notify: []embedded.Sink{{Durable: notify.Durable("<sink>"), Filters: filters, Replay: notify.ReplayConsumer("<sink>")}}}
}

var roleCell = regexp.MustCompile("`([^`]+)`")

// checkRoleTable compares NATS.md's role permissions table with the
// code's table, role by role and column by column, both ways: every
// subject the code allows or denies is in its cell, and every subject in
// a cell is the code's.
func checkRoleTable(doc string) []string {
	const marker = "<!-- role-permissions -->\n"
	i := strings.Index(doc, marker)
	if i < 0 {
		return []string{"NATS.md has no role permissions table"}
	}
	var problems []string
	rows := map[string][]string{}
	for _, line := range strings.Split(doc[i+len(marker):], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			problems = append(problems, "role table row "+line+" has not 4 cells")
			continue
		}
		rows[strings.TrimSpace(cells[0])] = cells[1:]
	}
	names := roleDocNames()
	for _, r := range embedded.Roles {
		row, ok := rows[string(r)]
		if !ok {
			problems = append(problems, "role table has no row for "+string(r))
			continue
		}
		delete(rows, string(r))
		p := r.Permissions(names)
		var deny []string
		if p.Publish.Deny != nil {
			deny = p.Publish.Deny
		}
		for j, want := range [][]string{p.Publish.Allow, deny, p.Subscribe.Allow} {
			var got []string
			for _, m := range roleCell.FindAllStringSubmatch(row[j], -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
				problems = append(problems, "role "+string(r)+" column "+[]string{"publish", "publish denied", "subscribe"}[j]+
					": NATS.md lists "+strings.Join(got, " ")+", the code "+strings.Join(want, " "))
			}
		}
	}
	for r := range rows {
		problems = append(problems, "role table has a row for "+r+", which the code does not have")
	}
	// A sink of several subjects gets the create subject without a filter.
	webhook := roleDocNames("a", "b")
	webhook.Notify[0].Replay = ""
	several := embedded.RoleNotify.Permissions(webhook).Publish.Allow
	for _, subj := range several {
		if !slices.Contains(embedded.RoleNotify.Permissions(names).Publish.Allow, subj) && !strings.Contains(doc, "`"+subj+"`") {
			problems = append(problems, "NATS.md does not name "+subj+", a sink of several subjects' create subject")
		}
	}
	for _, r := range embedded.Roles {
		if !strings.Contains(doc, "| `"+embedded.SeedFile(r)+"` | "+string(r)+" |") {
			problems = append(problems, "the credentials table has no row for "+embedded.SeedFile(r))
		}
	}
	return problems
}

func TestNATSRoleTableMatchesCode(t *testing.T) {
	for _, p := range checkRoleTable(readDoc(t, "NATS.md")) {
		t.Error(p)
	}
}

// TestNATSRoleGuardFailsOnDrift: a subject widened or dropped in the doc,
// a role missing, are all reported.
func TestNATSRoleGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	for what, changed := range map[string]string{
		"a widened subject": strings.Replace(doc, "`$JS.API.CONSUMER.CREATE.PATROL.subscriber.patrol.findings.>`",
			"`$JS.API.CONSUMER.CREATE.PATROL.subscriber.>`", 1),
		"a dropped deny":  strings.Replace(doc, ", `$JS.API.CONSUMER.DELETE.>` |", " |", 1),
		"a missing role":  strings.Replace(doc, "| worker | `patrol.remediation.outcomes`", "| wrker | `patrol.remediation.outcomes`", 1),
		"an unnamed list": strings.ReplaceAll(doc, "`$JS.API.CONSUMER.CREATE.PATROL.patrold-notify-<sink>`", "the bare create subject"),
	} {
		if changed == doc {
			t.Fatalf("%s: the doc has no such text", what)
		}
		if len(checkRoleTable(changed)) == 0 {
			t.Errorf("%s went unnoticed", what)
		}
	}
}
