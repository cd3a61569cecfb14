package docs

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
)

// trustFacts derives from the code what the trust sections of NATS.md
// and CLUSTER.md must state: the refusal counter's name (as the guard
// registers it), every refusal reason and every signed subject.
func trustFacts() (metric string, reasons, subjects []string, err error) {
	reg := prometheus.NewRegistry()
	auth, err := msgauth.New([]msgauth.Key{{ID: "k1", Secret: make([]byte, msgauth.MinSecret)}}, msgauth.Options{})
	if err != nil {
		return "", nil, nil, err
	}
	if _, err := bus.NewGuard(auth, nil, reg); err != nil {
		return "", nil, nil, err
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		return "", nil, nil, fmt.Errorf("the guard registers %d metrics (%v), want 1", len(mfs), err)
	}
	return mfs[0].GetName(), msgauth.Reasons, contracts.SignedSubjects, nil
}

// trustMissing lists the facts doc does not state: the metric with its
// labels, each reason and each signed subject in backquotes.
func trustMissing(doc, metric string, reasons, subjects []string) []string {
	var missing []string
	if !strings.Contains(doc, "`"+metric+"{subject,reason}`") {
		missing = append(missing, metric)
	}
	for _, w := range append(append([]string{}, reasons...), subjects...) {
		if !strings.Contains(doc, "`"+w) {
			missing = append(missing, w)
		}
	}
	return missing
}

func section(doc, heading string) string {
	i := strings.Index(doc, "\n## "+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+5:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestTrustDocsMatchCode(t *testing.T) {
	metric, reasons, subjects, err := trustFacts()
	if err != nil {
		t.Fatal(err)
	}
	nats := readDoc(t, "NATS.md")
	// Message authentication and the trust boundaries together.
	doc := section(nats, "Message authentication") + section(nats, "Trust boundaries")
	if m := trustMissing(doc, metric, reasons, subjects); len(m) != 0 {
		t.Errorf("docs/NATS.md (message authentication, trust boundaries) does not state: %q", m)
	}
	cl, err := os.ReadFile("CLUSTER.md")
	if err != nil {
		t.Fatal(err)
	}
	trust := section(string(cl), "Trust")
	for _, s := range subjects {
		if !strings.Contains(trust, s) {
			t.Errorf("docs/CLUSTER.md (trust) has no row for %s", s)
		}
	}
}

func TestTrustGuardFailsOnDrift(t *testing.T) {
	metric, reasons, subjects, err := trustFacts()
	if err != nil {
		t.Fatal(err)
	}
	doc := "`" + metric + "{subject,reason}` `unsigned` `" + strings.Join(reasons[1:], "` `") + "` `" + strings.Join(subjects, "` `") + "`"
	if got := trustMissing(doc, metric, reasons, subjects); len(got) != 0 {
		t.Fatalf("a complete text misses %q", got)
	}
	if got := trustMissing(strings.Replace(doc, "`unsigned`", "", 1), metric, reasons, append(subjects, "patrold_new")); strings.Join(got, ",") != "unsigned,patrold_new" {
		t.Fatalf("drift found %q, want unsigned and patrold_new", got)
	}
}

var seedRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([a-z]+) \\|")

// credentialsDrift compares the credentials table of NATS.md with the
// embedded server's roles and their seed files, in both directions.
func credentialsDrift(doc string, roles []embedded.Role) []string {
	inDoc := map[string]string{}
	for _, m := range seedRow.FindAllStringSubmatch(section(doc, "Embedded server credentials"), -1) {
		inDoc[m[1]] = m[2]
	}
	var drift []string
	for _, r := range roles {
		f := embedded.SeedFile(r)
		if inDoc[f] != string(r) {
			drift = append(drift, "`"+f+"` | "+string(r)+" is not a row")
		}
		delete(inDoc, f)
	}
	for f, r := range inDoc {
		drift = append(drift, "the row `"+f+"` | "+r+" names no role of the code")
	}
	sort.Strings(drift)
	return drift
}

// The credentials table of NATS.md names each role's seed file as the
// code names it, and no other.
func TestCredentialsDocMatchesCode(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	if d := credentialsDrift(doc, embedded.Roles); len(d) != 0 {
		t.Errorf("docs/NATS.md, Embedded server credentials: %q", d)
	}
}

func TestCredentialsGuardFailsOnDrift(t *testing.T) {
	doc := "\n## Embedded server credentials\n\n| `nats-daemon.nk` | daemon | serve |\n| `nats-old.nk` | old | - |\n"
	got := credentialsDrift(doc, []embedded.Role{embedded.RoleDaemon, embedded.RoleWorker})
	want := []string{"`nats-worker.nk` | worker is not a row", "the row `nats-old.nk` | old names no role of the code"}
	if !slices.Equal(got, want) {
		t.Fatalf("drift %q, want %q", got, want)
	}
}

// upgradeMissing lists what the upgrade part of doc does not state: the
// refusal counter, the reason and subjects an old version's messages are
// refused under, and the refusal's log line, each as the code has it.
func upgradeMissing(doc, metric string) []string {
	i := strings.Index(doc, "\n### Upgrading to signed messages\n")
	if i < 0 {
		return []string{"### Upgrading to signed messages"}
	}
	doc = doc[i:]
	var missing []string
	for _, w := range []string{"`" + metric + "{subject,reason}`", "`" + msgauth.ReasonUnsigned + "`", "`" + contracts.SubjectStateChanges + "`",
		"`" + contracts.SubjectRemediationRequests + "`", "`" + contracts.SubjectRemediationOutcomes + "`", "`" + bus.RefusedLog + "`",
		"`patrold db seed --force`"} {
		if !strings.Contains(doc, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

// CLUSTER.md says what an operator sees and does when instances of the
// version that signs meet an older one's unsigned messages.
func TestUpgradeDocMatchesCode(t *testing.T) {
	metric, _, _, err := trustFacts()
	if err != nil {
		t.Fatal(err)
	}
	cl := readDoc(t, "CLUSTER.md")
	if m := upgradeMissing(section(cl, "Trust"), metric); len(m) != 0 {
		t.Errorf("docs/CLUSTER.md, Upgrading to signed messages, does not state: %q", m)
	}
}

func TestUpgradeGuardFailsOnDrift(t *testing.T) {
	metric, _, _, err := trustFacts()
	if err != nil {
		t.Fatal(err)
	}
	cl := readDoc(t, "CLUSTER.md")
	trust := section(cl, "Trust")
	if got := upgradeMissing(strings.Replace(trust, "message refused: not", "message dropped: not", 1), metric); !slices.Equal(got, []string{"`" + bus.RefusedLog + "`"}) {
		t.Fatalf("a changed log line: drift %q", got)
	}
}
