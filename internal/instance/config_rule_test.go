package instance_test

import (
	"strings"
	"testing"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/internal/instance"
)

// TestConfigAppliesTheSameRule: config checks cluster.instance through
// the cluster section's Validate; it must accept and refuse exactly what
// Validate does, with the same message.
func TestConfigAppliesTheSameRule(t *testing.T) {
	for _, name := range []string{"node-a", "a", "A.b_c-9", strings.Repeat("x", 63), strings.Repeat("x", 64), "-lead", ".x", "has space", "ü", "a/b"} {
		want := instance.Validate(name)
		_, got := config.Load([]byte("cluster:\n  instance: \""+name+"\"\n"), nil)
		switch {
		case want == nil && got != nil:
			t.Errorf("%q: config refuses (%v), Validate accepts", name, got)
		case want != nil && (got == nil || got.Error() != "invalid configuration: "+want.Error()):
			t.Errorf("%q: config says %v, Validate %v", name, got, want)
		}
	}
}
