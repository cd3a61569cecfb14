package analyst_test

import (
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/signals"
)

func active(resource string, cat findings.Category, key string, source findings.Source) findings.Finding {
	at := testNow.Add(-24 * time.Hour)
	return findings.Finding{
		ID: findings.ID(resource, cat, key), Key: key, ResourceID: resource, Category: cat, Severity: findings.SeverityWarning,
		Source: source, Title: "Earlier: " + key, Status: findings.StatusActive, DetectedAt: at, LastSeenAt: at, TimesRaised: 3,
	}
}

// (e) A resolved verdict holds only when the deterministic check for the
// key agrees; uncertain verdicts are counted; present re-confirms.
func TestAssessmentSweepVerdicts(t *testing.T) {
	stillFull := active(localZFS, findings.CategoryCapacity, "high_disk", findings.SourceDeterministic)        // signal still present
	cpuCleared := active("node/pve1", findings.CategoryPerformance, "high_cpu", findings.SourceModel)          // evaluated, no signal
	custom := active(localZFS, findings.CategoryGeneral, "zfs-fragmentation", findings.SourceModel)            // not a catalogue key
	unsure := active("vm/102", findings.CategoryBackup, "backup_stale", findings.SourceDeterministic)          // uncertain
	memory := active("vm/101", findings.CategoryPerformance, "high_memory", findings.SourceDeterministic)      // present
	stopped := active("container/201", findings.CategoryPerformance, "high_cpu", findings.SourceDeterministic) // stopped: not evaluated
	all := []findings.Finding{stillFull, cpuCleared, custom, unsure, memory, stopped}

	a, c := scripted(t, []script.Turn{
		text("Nothing new."),    // detection
		text("Nothing to add."), // evaluation pass over the nine unmatched signals
		tools(get("s1", "node/pve1"), get("s2", localZFS), get("s3", "vm/101"), get("s4", "vm/102"), get("s5", "container/201")),
		tools(
			assess("v1", stillFull.ID, "resolved", "usage_percent 96.3"),
			assess("v2", cpuCleared.ID, "resolved", "cpu_percent 35 is below the clear threshold 65"),
			assess("v3", custom.ID, "resolved", "no fragmentation figure is reported"),
			assess("v4", unsure.ID, "uncertain", "the backup data does not settle it"),
			assess("v5", memory.ID, "present", "memory_percent 91 above 80"),
			assess("v6", stopped.ID, "resolved", "the container is stopped"),
		),
		tools(assess("v7", cpuCleared.ID, "present", "node/pve1 again")),
		text("Done."),
	}, nil)
	in := input(t, loadSnap(t, "small-faults.json"), all...)
	an := analyze(t, a, in)

	if len(an.Resolve) != 1 || an.Resolve[cpuCleared.ID] != findings.ResolveModelVerdict {
		t.Errorf("resolve %v, want only %s", an.Resolve, cpuCleared.ID)
	}
	for _, id := range []string{"v1", "v3", "v6"} {
		mustContain(t, id, c.result(t, id), `"resolution":"not_confirmed"`)
	}
	mustContain(t, "v2", c.result(t, "v2"), `"resolution":"confirmed"`)
	mustContain(t, "v7", c.result(t, "v7"), `"reason":"already_assessed"`)
	if an.Uncertain != 1 {
		t.Errorf("uncertain %d", an.Uncertain)
	}
	if len(an.Observations) != 1 || an.Observations[0].Key != "high_memory" || an.Observations[0].Evidence.String() != "memory_percent 91 above 80" {
		t.Errorf("present verdict must re-observe the finding: %+v", an.Observations)
	}
	matched, _ := signals.Match(in.Signals, an.Filed)
	if got := refs(matched); !slices.Equal(got, []string{"high_memory vm/101"}) {
		t.Errorf("matched %v", got)
	}
	// The sweep's turn limit is min(n+2, 12) for the six findings.
	if c.calls() != 2+4 {
		t.Errorf("calls %d", c.calls())
	}
}

// Findings the detection loop already gave a verdict are not swept again.
func TestSweepSkipsFindingsWithVerdicts(t *testing.T) {
	memory := active("vm/101", findings.CategoryPerformance, "high_memory", findings.SourceDeterministic)
	gone := active("vm/999", findings.CategoryPerformance, "high_cpu", findings.SourceDeterministic)
	a, c := scripted(t, []script.Turn{
		tools(get("d1", "vm/101")),
		tools(assess("d2", memory.ID, "present", "memory_percent 91"), assess("d0", gone.ID, "present", "still busy")),
		text("Done."),
		text("Evaluation: nothing."),
		text("Sweep: nothing to add."),
		text("never asked"),
	}, nil)
	an := analyze(t, a, input(t, loadSnap(t, "small-faults.json"), memory, gone))
	// The finding on a resource that left the snapshot cannot be present;
	// it is swept (one turn: the script's closing text).
	mustContain(t, "gone", c.result(t, "d0"), `"code":"NOT_FOUND"`, `"field":"finding_id"`)
	if c.calls() != 5 {
		t.Errorf("calls %d, want 3 detection + 1 evaluation + 1 sweep", c.calls())
	}
	if len(an.Filed) != 1 || an.Uncertain != 0 {
		t.Errorf("filed %v", an.Filed)
	}
}
