package eval

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/snapshot"
)

// The reference models: scripted models whose figures are known, so the
// numbers of a real model have something to be read against.
const (
	// RefPerfect reads every resource of the ground truth and files
	// exactly the scenario's expected findings and verdicts.
	RefPerfect = "perfect"
	// RefLazy answers at once that all is well and files nothing.
	RefLazy = "lazy"
	// RefNoisy reads one resource and files junk: an invented figure
	// (refused), a finding no signal supports (filed), a report on a
	// resource that does not exist and a call with a misspelt argument.
	RefNoisy = "noisy"
)

// References lists the reference models in table order.
var References = []string{RefPerfect, RefLazy, RefNoisy}

// Reference returns the named reference model for one run of sc.
func Reference(name string, sc *Scenario) (model.Provider, error) {
	var turns []script.Turn
	switch name {
	case RefPerfect:
		turns = perfectTurns(sc)
	case RefLazy:
		turns = []script.Turn{{Text: "Everything looks fine."}}
	case RefNoisy:
		turns = noisyTurns(sc)
	default:
		return nil, fmt.Errorf("reference: %q is not one of %v", name, References)
	}
	return script.New(&script.Script{Turns: turns})
}

func call(id, name string, args map[string]any) model.ToolCall {
	raw, _ := json.Marshal(args) // strings and maps only
	return model.ToolCall{ID: id, Name: name, Arguments: raw}
}

func perfectTurns(sc *Scenario) []script.Turn {
	var ids []string
	for _, f := range sc.Expect.Findings {
		ids = append(ids, snapshot.CanonicalID(f.ResourceID))
	}
	for _, v := range sc.Expect.Verdicts {
		ids = append(ids, snapshot.CanonicalID(v.ResourceID))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return []script.Turn{{Text: "Nothing to report: every resource is within its thresholds."}}
	}
	var read, write script.Turn
	for i, id := range ids {
		read.ToolCalls = append(read.ToolCalls, call(fmt.Sprintf("r%d", i+1), "get_resource", map[string]any{"id": id}))
	}
	for i, f := range sc.Expect.Findings {
		args := map[string]any{"resource_id": f.ResourceID, "category": f.Category, "key": f.Key, "severity": f.Severity,
			"title": f.Title, "evidence": f.Evidence}
		if f.Description != "" {
			args["description"] = f.Description
		}
		write.ToolCalls = append(write.ToolCalls, call(fmt.Sprintf("f%d", i+1), "report_finding", args))
	}
	for i, v := range sc.Expect.Verdicts {
		write.ToolCalls = append(write.ToolCalls, call(fmt.Sprintf("v%d", i+1), "assess_finding",
			map[string]any{"finding_id": v.FindingID(), "verdict": v.Verdict, "evidence": v.Evidence}))
	}
	return []script.Turn{read, write, {Text: "Done."}}
}

// noisyTurns target the first resource of the fleet by id.
func noisyTurns(sc *Scenario) []script.Turn {
	snap := sc.snap
	ids := make([]string, 0, len(snap.Resources))
	for i := range snap.Resources {
		ids = append(ids, snapshot.CanonicalID(snap.Resources[i].ID))
	}
	slices.Sort(ids)
	target := ids[0]
	return []script.Turn{
		{ToolCalls: []model.ToolCall{call("r1", "get_resource", map[string]any{"id": target})}},
		{ToolCalls: []model.ToolCall{
			call("n1", "report_finding", map[string]any{"resource_id": target, "category": "security", "key": "possible-intrusion",
				"severity": "critical", "title": "Possible intrusion", "evidence": "traffic anomaly of 731.77 percent"}),
			call("n2", "report_finding", map[string]any{"resource_id": target, "category": "general", "key": "needs-attention",
				"severity": "warning", "title": "This resource may need attention", "evidence": "noticed while reading the resource"}),
			call("n3", "report_finding", map[string]any{"resource_id": "vm/99999", "category": "general", "key": "ghost",
				"severity": "warning", "title": "A guest that is not there", "evidence": "seen nowhere"}),
			call("n4", "get_resource", map[string]any{"identifier": target}),
		}},
		{Text: "Done: several problems found."},
	}
}
