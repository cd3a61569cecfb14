package proxmox

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsNameWhatTheCodeDoes: docs/SOURCES.md lists exactly the endpoint
// families of each source's metrics and the interface prefixes the guest
// agent's addresses skip.
func TestDocsNameWhatTheCodeDoes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	section := func(title string) string {
		_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
		if !ok {
			t.Fatalf("docs/SOURCES.md has no section %q", title)
		}
		body, _, _ := strings.Cut(rest, "\n## ")
		return body
	}
	code := regexp.MustCompile("`([a-z_]+)`")
	listed := func(text string) []string {
		var out []string
		for _, m := range code.FindAllStringSubmatch(text, -1) {
			out = append(out, m[1])
		}
		return out
	}
	for _, c := range []struct {
		section, from, to string
		want              []string
	}{
		{"proxmox", "`endpoint` is the family (", ")", endpointFamilies},
		{"pbs", "`endpoint` is\n", "\n`snapshots`.", pbsEndpointFamilies},
	} {
		text := section(c.section)
		_, after, ok := strings.Cut(text, c.from)
		if !ok {
			t.Fatalf("section %s: no %q", c.section, c.from)
		}
		families, _, _ := strings.Cut(after, c.to)
		got := listed(families + c.to)
		if !slices.Equal(got, c.want) {
			t.Errorf("section %s lists endpoint families %q, the code has %q", c.section, got, c.want)
		}
	}
	row := section("proxmox")
	_, row, _ = strings.Cut(row, "| `/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces` |")
	row, _, _ = strings.Cut(row, "\n")
	var prefixes []string
	for _, m := range regexp.MustCompile("`([a-z_.-]+)\\*`").FindAllStringSubmatch(row, -1) {
		prefixes = append(prefixes, m[1])
	}
	if !slices.Equal(prefixes, virtualPrefixes) {
		t.Errorf("the agent row skips %q, the code %q", prefixes, virtualPrefixes)
	}
}
