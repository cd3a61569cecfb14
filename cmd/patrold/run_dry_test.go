package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/patrol"
)

// dirHashes is every file of dir with its content's hash.
func dirHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = fmt.Sprintf("%x", sha256.Sum256(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// volatile are the parts of a text report that differ between two runs
// of the same input: the run id, new finding ids and the duration.
var volatile = regexp.MustCompile(`\b[0-9A-Z]{26}\b|\b[0-9]+ms\b`)

// TestRunDryRunWritesNothing: over a data_dir the demo patrolled, `run
// --dry-run --snapshot` prints the report the real run then prints, and
// leaves every file of data_dir as it was. The real run warns first that
// it resolves the demo's findings, counting them.
func TestRunDryRunWritesNothing(t *testing.T) {
	c := newCLI(t, "")
	js, code := c.run("run", "--output", "json")
	var first patrol.Report
	if code != 0 || json.Unmarshal([]byte(js), &first) != nil || first.Source == "" {
		t.Fatalf("demo run: %d %s", code, js)
	}
	before := dirHashes(t, filepath.Join(c.dir, "var"))
	dry, dryErr, code := c.run3("run", "--dry-run", "--snapshot", "../../examples/small-faults.json")
	if code != 0 || dryErr != "" {
		t.Fatalf("dry run: %d %s %s", code, dry, dryErr)
	}
	if after := dirHashes(t, filepath.Join(c.dir, "var")); !maps.Equal(before, after) {
		t.Fatalf("the dry run changed data_dir:\nbefore %v\nafter  %v", before, after)
	}
	real, realErr, code := c.run3("run", "--snapshot", "../../examples/small-faults.json")
	if code != 0 {
		t.Fatalf("real run: %d %s %s", code, real, realErr)
	}
	if got, want := volatile.ReplaceAllString(dry, "X"), volatile.ReplaceAllString(real, "X"); got != want {
		t.Errorf("dry run printed:\n%s\nthe real run:\n%s", got, want)
	}
	var doc struct {
		Resources []struct{ ID string } `json:"resources"`
	}
	data, _ := os.ReadFile("../../examples/small-faults.json")
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, r := range doc.Resources {
		in[r.ID] = true
	}
	lacking := 0
	for _, f := range first.Findings {
		if !in[f.ResourceID] {
			lacking++
		}
	}
	if lacking == 0 {
		t.Fatal("the demo filed no finding the snapshot lacks")
	}
	want := "warning: data_dir " + filepath.Join(c.dir, "var") + " holds " + fmt.Sprint(lacking) + " active findings from " + first.Source +
		" on resources this snapshot lacks; this run resolves them (--dry-run writes nothing; or use a copy of data_dir)\n"
	if realErr != want {
		t.Errorf("warning:\n%q\nwant\n%q", realErr, want)
	}
	// The same source again: nothing to warn about.
	if _, again, code := c.run3("run", "--snapshot", "../../examples/small-faults.json"); code != 0 || again != "" {
		t.Errorf("second run: %d %q", code, again)
	}
}

// TestRunNoModelWording: without a model the signal count stands alone.
func TestRunNoModelWording(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("run", "--snapshot", "../../examples/small-faults.json")
	lines := regexp.MustCompile(`(?m)^signals:.*$`).FindAllString(out, -1)
	if code != 0 || len(lines) != 1 || !regexp.MustCompile(`^signals: [0-9]+$`).MatchString(lines[0]) {
		t.Fatalf("run: %d %q\n%s", code, lines, out)
	}
}

// TestStatusWithoutDaemon: no daemon answering is a readable message that
// names the address tried and what to do, and exit 1.
func TestStatusWithoutDaemon(t *testing.T) {
	c := newCLI(t, "")
	out, errOut, code := c.run3("status")
	want := "no daemon status at http://127.0.0.1:1: nothing listens there (connection refused); " +
		"start the daemon (patrold serve, or systemctl start patrold), or give --config the file of the daemon whose http.listen this is"
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("status: %d %q\n%q\nwant %q", code, out, errOut, want)
	}
	if strings.Contains(errOut, "dial tcp") {
		t.Fatal("a raw dial error")
	}
}
