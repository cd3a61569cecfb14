package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/config"
)

// TestDurationDoc checks the durations bullet of CONFIGURATION.md against
// config.ParseDuration: each example parses, and the quoted refusal is the
// code's own error for a bare number.
func TestDurationDoc(t *testing.T) {
	data, err := os.ReadFile("CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "- Durations need a unit")
	if start < 0 {
		t.Fatal("CONFIGURATION.md: no durations bullet")
	}
	bullet := doc[start:]
	bullet = bullet[:strings.Index(bullet, "\n- ")]
	examples := regexp.MustCompile("`([0-9][0-9a-z.]*)`").FindAllStringSubmatch(bullet, -1)
	if len(examples) < 5 {
		t.Fatalf("too few examples in %q", bullet)
	}
	for _, ex := range examples {
		if _, err := config.ParseDuration(ex[1]); err != nil {
			t.Errorf("example %s: %v", ex[1], err)
		}
	}
	_, err = config.ParseDuration("30")
	if err == nil {
		t.Fatal("a bare number is accepted")
	}
	quoted := "schedule.startup_delay: " + err.Error()
	if !strings.Contains(strings.Join(strings.Fields(bullet), " "), quoted) {
		t.Errorf("the bullet does not quote the refusal %q", quoted)
	}
}
