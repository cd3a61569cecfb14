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

// TestDocsListEndpointsAndPrivileges: the endpoints table of
// docs/SOURCES.md is the code's, row for row, both ways; and the code's
// table covers every endpoint family, in order.
func TestDocsListEndpointsAndPrivileges(t *testing.T) {
	var families []string
	for _, e := range pveEndpoints {
		families = append(families, e.family)
	}
	if !slices.Equal(families, endpointFamilies) {
		t.Errorf("endpoints name families %q, the metrics %q", families, endpointFamilies)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), "<!-- guard:proxmox-endpoints -->\n")
	block, _, ok2 := strings.Cut(block, "<!-- /guard:proxmox-endpoints -->")
	if !ok || !ok2 {
		t.Fatal("docs/SOURCES.md has no <!-- guard:proxmox-endpoints --> table")
	}
	var got, want [][4]string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n")[2:] {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("row %q: want 4 cells", line)
		}
		for i := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(cells[i]), "`", "")
		}
		got = append(got, [4]string(cells))
	}
	for _, e := range pveEndpoints {
		want = append(want, [4]string{e.family, e.path, e.privilege, strings.Join(e.keys, ", ")})
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/SOURCES.md endpoints:\n%q\nthe code:\n%q", got, want)
	}
}

// TestDocsListHiddenGuestKeys: docs/SOURCES.md names the keys a list
// without guests leaves unevaluated, as the code does.
func TestDocsListHiddenGuestKeys(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), "<!-- guard:hidden-guest-keys -->")
	block, _, ok2 := strings.Cut(block, "<!-- /guard:hidden-guest-keys -->")
	if !ok || !ok2 {
		t.Fatal("docs/SOURCES.md has no <!-- guard:hidden-guest-keys --> list")
	}
	if got, want := strings.ReplaceAll(block, "`", ""), strings.Join(guestKeys, ", "); got != want {
		t.Errorf("docs/SOURCES.md lists %q, the code %q", got, want)
	}
}
