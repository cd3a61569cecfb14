package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalScenariosStayInTheDirectory: `patrold eval --scenarios DIR`
// reads only regular files inside DIR. A symlink to a file outside, whose
// line is a secret, is refused by name; a regular file of secrets fails to
// parse by line. Neither prints the secret (issue 37 item 9: the target's
// lines were printed in the error).
func TestEvalScenariosStayInTheDirectory(t *testing.T) {
	const secret = "root_token: s3cr3t-hunter2"
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, "")
	cases := []struct {
		name  string
		setup func(dir string) error
		want  string
	}{
		{"symlink out of the directory", func(dir string) error { return os.Symlink(outside, filepath.Join(dir, "zz-link.yaml")) },
			`--scenarios: scenarios: "zz-link.yaml" is a symlink, not a regular file: scenario files are read only as regular files inside the directory`},
		{"a regular file of secrets", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "zz-copy.yaml"), []byte(secret+"\n"), 0o600)
		},
			"--scenarios: zz-copy.yaml: scenario: line 1: an unknown key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := evalDir(t, "04-high-memory-vm.yaml")
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := c.run3("eval", "--scenarios", dir, "--reference", "perfect")
			if code != 2 || out != "" || errOut != tc.want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2, nothing and %q", code, out, errOut, tc.want)
			}
			if strings.Contains(out+errOut, "s3cr3t") || strings.Contains(out+errOut, "root_token") {
				t.Fatalf("the secret was printed: %q %q", out, errOut)
			}
		})
	}
}
