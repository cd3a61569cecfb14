package patrol_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/patrol"
)

// TestTriggerLimitsAndCoalescing drives Triggers with a fake clock:
//   - the per-resource limit (2 min) drops what was triggered lately;
//   - the global one (30 s) refuses any trigger soon after a triggered run;
//   - requests during a run are coalesced into one scoped run started
//     when it ends;
//   - each outcome is counted.
func TestTriggerLimitsAndCoalescing(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now := t0
	busy := false
	var started []string
	reg := prometheus.NewRegistry()
	tr, err := patrol.NewTriggers(patrol.TriggerOptions{Now: func() time.Time { return now }, Registerer: reg,
		Start: func(ro patrol.RunOptions) (string, error) {
			if busy {
				return "", &patrol.BusyError{CurrentRunID: "cron"}
			}
			started = append(started, fmt.Sprintf("%s %q", strings.Join(ro.Scope, ","), ro.Reason))
			return fmt.Sprintf("run-%d", len(started)), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		at        time.Duration
		busy      bool
		resources []string
		want      patrol.TriggerOutcome
		wantRun   string
	}
	for i, s := range []step{
		{0, false, []string{"VM/1"}, patrol.TriggerTaken, "run-1"},
		{10 * time.Second, false, []string{"vm/2"}, patrol.TriggerRefused, ""},            // global: 10 s after run-1
		{40 * time.Second, false, []string{"vm/1"}, patrol.TriggerRefused, ""},            // vm/1: 40 s after its trigger
		{40 * time.Second, false, []string{"vm/1", "vm/2"}, patrol.TriggerTaken, "run-2"}, // vm/2 alone
		{80 * time.Second, true, []string{"vm/3"}, patrol.TriggerCoalesced, ""},
		{81 * time.Second, true, []string{"vm/4", "vm/3"}, patrol.TriggerCoalesced, ""}, // vm/3 again: within its limit
		{82 * time.Second, true, []string{"vm/3"}, patrol.TriggerRefused, ""},
		{2*time.Minute + time.Second, false, []string{"vm/1"}, patrol.TriggerTaken, "run-4"}, // vm/1's limit has passed
	} {
		now, busy = t0.Add(s.at), s.busy
		got, id, err := tr.Request(s.resources, fmt.Sprintf("alert %d", i))
		if err != nil || got != s.want || id != s.wantRun {
			t.Fatalf("step %d (%v %v): %s %q %v, want %s %q", i, s.at, s.resources, got, id, err, s.want, s.wantRun)
		}
		if i == 6 {
			// The run in progress ends: the coalesced requests run as one.
			busy = false
			if id, err := tr.RunEnded(); err != nil || id != "run-3" {
				t.Fatalf("run ended: %q %v", id, err)
			}
			if id, err := tr.RunEnded(); err != nil || id != "" {
				t.Fatalf("nothing pending: %q %v", id, err)
			}
		}
	}
	want := []string{`vm/1 "alert 0"`, `vm/2 "alert 3"`, `vm/3,vm/4 "alert 4; alert 5"`, `vm/1 "alert 7"`}
	if !reflect.DeepEqual(started, want) {
		t.Fatalf("started\n%q\nwant\n%q", started, want)
	}
	exp := `
# HELP patrold_patrol_triggers_total Trigger requests (alerts, hooks) by outcome: taken (a scoped run started), coalesced (joined the run after the one in progress), refused (rate limited).
# TYPE patrold_patrol_triggers_total counter
patrold_patrol_triggers_total{outcome="coalesced"} 2
patrold_patrol_triggers_total{outcome="refused"} 3
patrold_patrol_triggers_total{outcome="taken"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "patrold_patrol_triggers_total"); err != nil {
		t.Fatal(err)
	}
}

// TestTriggerConfigValidate: each unfit trigger key is named.
func TestTriggerConfigValidate(t *testing.T) {
	c := patrol.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c.Triggers.PerResource, c.Triggers.Global = 0, -time.Second
	c.Triggers.AlertLabels = []patrol.AlertLabel{{Label: " ", ID: "{value}"}, {Label: "node", ID: "node/pve1"}}
	want := "patrol.triggers.per_resource: 0s must be positive\n" +
		"patrol.triggers.global: -1s must be positive\n" +
		"patrol.triggers.alert_labels[0].label: required\n" +
		`patrol.triggers.alert_labels[1].id: "node/pve1" has neither {value} nor {host}: every alert would name the same resource`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	c = patrol.DefaultConfig()
	c.Triggers.AlertLabels = nil
	if err := c.Validate(); err == nil || err.Error() != "patrol.triggers.alert_labels: at least one label is required" {
		t.Fatalf("no labels: %v", err)
	}
}
