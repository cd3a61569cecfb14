package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

// complete runs cobra's hidden __complete command as a shell does for
// `patrold --config FILE argv...<TAB>` and returns its whole standard
// output.
func (c *cli) complete(argv ...string) string {
	c.t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&app{stdout: &out, stderr: &errb})
	root.SetArgs(append([]string{"__complete", "--config", c.cfg}, argv...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		c.t.Fatalf("__complete %q: %v %s", argv, err, errb.String())
	}
	return out.String()
}

// completionOut is what __complete prints for values and directive 4
// (no file completion).
func completionOut(values ...string) string {
	return strings.Join(append(values, ":4"), "\n") + "\n"
}

// TestCompletionOfFlagValues: --state, --severity, --reason and --kind
// complete to the values the code accepts, from the code's own tables.
func TestCompletionOfFlagValues(t *testing.T) {
	c := newCLI(t, "")
	kinds := []string{}
	for _, k := range snapshot.Kinds {
		kinds = append(kinds, string(k))
	}
	kinds = append(kinds, string(snapshot.KindCluster))
	for _, k := range kinds {
		if !snapshot.Kind(k).Valid() {
			t.Fatalf("kind %q offered but not valid", k)
		}
	}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"findings", "list", "--state", ""}, completionOut(findings.ListStates...)},
		{[]string{"findings", "list", "--severity", ""}, completionOut(contracts.Severities...)},
		{[]string{"findings", "dismiss", "0123456789abcdef", "--reason", ""}, completionOut(findings.DismissReasons...)},
		{[]string{"silences", "create", "--kind", ""}, completionOut(kinds...)},
	} {
		if got := c.complete(tc.argv...); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.argv, got, tc.want)
		}
	}
	// Every dismiss reason offered is one dismiss accepts.
	for _, r := range findings.DismissReasons {
		_, _, _, err := findings.ApplyAction(findings.Finding{Status: findings.StatusActive}, findings.ActionRequest{Action: findings.ActionDismiss, Reason: r}, time.Now())
		var ie *findings.InputError
		if errors.As(err, &ie) {
			t.Errorf("reason %q offered but refused: %v", r, err)
		}
	}
}

// TestCompletionOfFindingIDs: show and every action complete to the ids
// in the local database, with status, resource and title, read-only: no
// database is created where there is none, and an existing one is not
// written.
func TestCompletionOfFindingIDs(t *testing.T) {
	c := newCLI(t, "")
	db := filepath.Join(c.dir, "var", "patrold.db")
	if got := c.complete("findings", "show", ""); got != completionOut() {
		t.Fatalf("no database: %q", got)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("completion created the database: %v", err)
	}
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatalf("run: %d %s", code, out)
	}
	out, code := c.run("findings", "list", "--state", "all", "--limit", "200", "--output", "json")
	if code != 0 {
		t.Fatal(out)
	}
	var page struct {
		Findings []struct {
			ID, Status, Title string
			Resource          string `json:"resource_id"`
		}
	}
	if err := json.Unmarshal([]byte(out), &page.Findings); err != nil {
		t.Fatal(err)
	}
	if len(page.Findings) < 2 {
		t.Fatalf("%d findings", len(page.Findings))
	}
	// One run: all active and detected at once, so ids break the tie.
	slices.SortFunc(page.Findings, func(a, b struct {
		ID, Status, Title string
		Resource          string `json:"resource_id"`
	}) int {
		return strings.Compare(a.ID, b.ID)
	})
	var all []string
	for _, f := range page.Findings {
		all = append(all, f.ID+"\t"+f.Status+" "+f.Resource+": "+f.Title)
	}
	before := hashDB(t, c.dir)
	for _, argv := range [][]string{{"findings", "show", ""}, {"findings", "ack", ""}, {"findings", "resolve", ""}} {
		if got := c.complete(argv...); got != completionOut(all...) {
			t.Errorf("%q:\n got %q\nwant %q", argv, got, completionOut(all...))
		}
	}
	first := page.Findings[0].ID
	if got := c.complete("findings", "show", first[:10]); got != completionOut(all[0]) && !strings.HasPrefix(all[1], first[:10]) {
		t.Errorf("prefix %s: %q", first[:10], got)
	}
	if got := c.complete("findings", "show", first, ""); got != completionOut() {
		t.Errorf("a second argument: %q", got)
	}
	if hashDB(t, c.dir) != before {
		t.Error("completion wrote the database")
	}
}
