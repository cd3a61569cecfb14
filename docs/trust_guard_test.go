package docs

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
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
	nats, err := os.ReadFile("NATS.md")
	if err != nil {
		t.Fatal(err)
	}
	// Message authentication and the trust boundaries together.
	doc := section(string(nats), "Message authentication") + section(string(nats), "Trust boundaries")
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
