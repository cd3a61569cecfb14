package eval

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// secretLine is what a file outside the scenario directory holds.
const secretLine = "db_password: hunter2-do-not-print"

// fifoWithWriter makes a FIFO at path with a writer waiting on it, so a
// loader that opens it reads a line and fails at once instead of
// blocking the test until its timeout. Cleanup releases the writer.
func fifoWithWriter(t *testing.T, path string) error {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.WriteString("fifo: read\n")
			f.Close()
		}
	}()
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			f.Close()
		}
	})
	return nil
}

// TestLoadDirReadsOnlyRegularFiles: a scenario file is a regular file
// directly inside the directory. A symlink (out of the directory or
// inside it), a directory and a FIFO are refused by name, unread; no
// error quotes a file's content.
func TestLoadDirReadsOnlyRegularFiles(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte(secretLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const tail = ", not a regular file: scenario files are read only as regular files inside the directory"
	cases := []struct {
		name  string
		setup func(dir string) error
		want  string
	}{
		{"symlink out", func(dir string) error { return os.Symlink(outside, filepath.Join(dir, "b.yaml")) },
			`scenarios: "b.yaml" is a symlink` + tail},
		{"symlink in", func(dir string) error { return os.Symlink(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")) },
			`scenarios: "b.yaml" is a symlink` + tail},
		{"directory", func(dir string) error { return os.Mkdir(filepath.Join(dir, "b.yaml"), 0o700) },
			`scenarios: "b.yaml" is a directory` + tail},
		{"fifo", func(dir string) error { return fifoWithWriter(t, filepath.Join(dir, "b.yaml")) },
			`scenarios: "b.yaml" is a special file` + tail},
		{"a regular file of secrets", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(secretLine+"\n"), 0o600)
		},
			"b.yaml: scenario: line 1: an unknown key"},
		{"a secret scalar", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("hunter2-do-not-print\n"), 0o600)
		}, "b.yaml: scenario: line 1: a value of the wrong type"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(okScenario), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := c.setup(dir); err != nil {
			t.Fatal(err)
		}
		scs, err := LoadDir(dir)
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v (%d scenarios), want %q", c.name, err, len(scs), c.want)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(okScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	if scs, err := LoadDir(dir); err != nil || len(scs) != 1 || scs[0].File() != "a.yaml" {
		t.Fatalf("a regular file: %v %v", scs, err)
	}
}

// TestParseQuotesNoContent: decoding and validation errors name the line
// or the field, never the value the file holds there.
func TestParseQuotesNoContent(t *testing.T) {
	const secret = "hunter2-do-not-print"
	snap := "snapshot: {version: 1, taken_at: \"2026-11-29T06:00:00Z\", resources: [{id: node/pve1, kind: node}]}\n"
	cases := []struct{ doc, want string }{
		{secret + "\n", "scenario: line 1: a value of the wrong type"},
		{"name: a\ndescription: d\n" + secret + ": 1\n" + snap, "scenario: line 3: an unknown key"},
		{"name: [" + secret + "]\n", "scenario: line 1: a value of the wrong type"},
		{"name: a\nname: " + secret + "\n", "scenario: line 2: a key given twice"},
		{"name: *" + secret + "\n", "scenario: unknown anchor (value) referenced"},
		{"name: " + secret + " x\ndescription: d\n" + snap, "name: must be 1-64 lower-case letters, digits and '-'"},
		{"name: a\ndescription: d\n" + snap + "expect: {signals: [{type: " + secret + ", resource_id: node/pve1, severity: warning}]}\n", "expect.signals[0].type: not a signal type"},
		{"name: a\ndescription: d\n" + snap + "expect: {signals: [{type: high_cpu, resource_id: " + secret + ", severity: warning}]}\n", "expect.signals[0].resource_id: not a resource of the snapshot"},
		{"name: a\ndescription: d\nsnapshot: {version: 1, taken_at: \"" + secret + "\", resources: []}\n", "snapshot: invalid snapshot: taken_at: not an RFC 3339 time: (value)"},
		{"name: a\ndescription: d\nsnapshot: {version: 1, taken_at: \"2026-11-29T06:00:00Z\", resources: [{id: vm/1, kind: vm, metrics: {cpu_percent: 300}, notes: \"" + secret + "\"}]}\n", "snapshot: resources[0].metrics.cpu_percent: outside 0..100"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%.60q: %v, want %q and no secret", c.doc, err, c.want)
		}
	}
}
