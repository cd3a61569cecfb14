package analyst_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol/analyst"
)

// resultOf decodes a fenced tool result's JSON envelope.
func resultOf(t *testing.T, c *capture, id string) map[string]any {
	t.Helper()
	content := c.result(t, id)
	lines := strings.Split(content, "\n")
	var env map[string]any
	if err := json.Unmarshal([]byte(strings.Join(lines[1:len(lines)-1], "\n")), &env); err != nil {
		t.Fatalf("%s: %v\n%s", id, err, content)
	}
	return env
}

func TestReadTools(t *testing.T) {
	open := active("vm/101", findings.CategoryPerformance, "high_memory", findings.SourceDeterministic)
	a, c := scripted(t, []script.Turn{tools(
		call("r1", analyst.ToolListResources, map[string]any{"kind": "vm"}),
		call("r2", analyst.ToolListResources, map[string]any{"limit": 4}),
		call("r3", analyst.ToolListResources, map[string]any{"limit": 4, "offset": 8}),
		call("r4", analyst.ToolListResources, map[string]any{"tag": "DB", "status": "Running"}),
		call("r5", analyst.ToolListResources, map[string]any{"limit": 101}),
		call("r6", analyst.ToolListResources, map[string]any{"kind": "printer"}),
		call("r7", analyst.ToolGetResource, map[string]any{"id": "VM/101"}),
		call("r8", analyst.ToolGetResource, map[string]any{"id": "vm/999"}),
		call("r9", analyst.ToolListFindings, map[string]any{"resource_id": "vm/101"}),
		call("r10", analyst.ToolListFindings, map[string]any{"resource_id": "vm/102"}),
	), text("Done.")}, nil)
	analyze(t, a, input(t, loadSnap(t, "small-faults.json"), open))

	page := func(id string) (ids []string, total float64, next any) {
		env := resultOf(t, c, id)
		res := env["result"].(map[string]any)
		for _, it := range res["items"].([]any) {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		return ids, res["total"].(float64), res["next_offset"]
	}
	if ids, total, next := page("r1"); strings.Join(ids, ",") != "vm/101,vm/102" || total != 2 || next != nil {
		t.Errorf("kind filter: %v %v %v", ids, total, next)
	}
	if ids, total, next := page("r2"); len(ids) != 4 || total != 9 || next != float64(4) {
		t.Errorf("first page: %v %v %v", ids, total, next)
	}
	if ids, _, next := page("r3"); strings.Join(ids, ",") != "disk/pve1/sdb" || next != nil {
		t.Errorf("last page: %v %v", ids, next)
	}
	if ids, _, _ := page("r4"); strings.Join(ids, ",") != "vm/101" {
		t.Errorf("tag and status filters are case-insensitive: %v", ids)
	}
	mustContain(t, "limit", c.result(t, "r5"), `"code":"INVALID_INPUT"`, `"field":"limit"`)
	mustContain(t, "kind", c.result(t, "r6"), `"code":"INVALID_INPUT"`, "arguments.kind")
	mustContain(t, "get", c.result(t, "r7"), `"ok":true`, `"hours_since_last_backup_success":51.9`, `"backup_max_age_hours":48`, `"memory":{"trigger":80,"clear":75}`)
	mustContain(t, "get unknown", c.result(t, "r8"), `"code":"NOT_FOUND"`, `"field":"id"`)
	mustContain(t, "findings", c.result(t, "r9"), `"total":1`, open.ID)
	mustContain(t, "findings elsewhere", c.result(t, "r10"), `"total":0`, `"items":[]`)
}

func TestReportChecks(t *testing.T) {
	long := strings.Repeat("x", analyst.MaxTitleChars+1)
	bad := func(id string, mut func(map[string]any)) map[string]any {
		args := map[string]any{"resource_id": localZFS, "category": "capacity", "key": "high_disk", "severity": "critical",
			"title": "Pool nearly full", "evidence": "usage_percent 96.3"}
		mut(args)
		return args
	}
	a, c := scripted(t, []script.Turn{
		// A report judged before any read ran: the state machine has no
		// target yet (the read beside it does not count, every call of a
		// batch is judged before any runs).
		tools(report("f0", localZFS, "capacity", "high_disk", "critical", "usage_percent 96.3"),
			call("f0r", analyst.ToolListResources, nil)),
		tools(get("f1", localZFS)),
		tools(
			call("f2", analyst.ToolReportFinding, bad("f2", func(m map[string]any) { m["title"] = long })),
			call("f3", analyst.ToolReportFinding, bad("f3", func(m map[string]any) { m["resource_id"] = "vm/999" })),
			call("f4", analyst.ToolReportFinding, bad("f4", func(m map[string]any) { m["severity"] = "fatal" })),
			call("f5", analyst.ToolReportFinding, bad("f5", func(m map[string]any) { m["evidence"] = "   " })),
			call("f6", analyst.ToolReportFinding, bad("f6", func(m map[string]any) { m["extra"] = true })),
			call("f7", analyst.ToolReportFinding, bad("f7", func(m map[string]any) { m["resource_id"] = "STORAGE/pve1/local-zfs"; m["key"] = "Disk Full" })),
		),
		text("Done."),
	}, nil)
	an := analyze(t, a, input(t, loadSnap(t, "small-faults.json")))
	mustContain(t, "f0", c.result(t, "f0"), `"code":"FSM_BLOCKED"`)
	mustContain(t, "f2", c.result(t, "f2"), `"code":"INVALID_INPUT"`, `"field":"title"`)
	mustContain(t, "f3", c.result(t, "f3"), `"code":"NOT_FOUND"`, `"field":"resource_id"`)
	mustContain(t, "f4", c.result(t, "f4"), `"code":"INVALID_INPUT"`, "arguments.severity")
	mustContain(t, "f5", c.result(t, "f5"), `"code":"INVALID_INPUT"`, `"field":"evidence"`)
	mustContain(t, "f6", c.result(t, "f6"), `"code":"INVALID_INPUT"`, "arguments.extra")
	// The id is canonicalised and the key normalised before identity.
	want := findings.ID(localZFS, findings.CategoryCapacity, "high_disk")
	mustContain(t, "f7", c.result(t, "f7"), `"ok":true`, want)
	if len(an.Observations) != 1 || an.Observations[0].ResourceID != localZFS || an.Observations[0].Key != "high_disk" {
		t.Errorf("observations %+v", an.Observations)
	}
}

// Every tool is classified as the spec says: reads are reads, the two
// finding tools are writes to patrold's own state, and no profile holds
// anything else.
func TestToolClassification(t *testing.T) {
	profiles := analyst.Profiles()
	for stage, p := range profiles {
		for _, name := range p.Tools {
			switch name {
			case analyst.ToolListResources, analyst.ToolGetResource, analyst.ToolListFindings,
				analyst.ToolReportFinding, analyst.ToolAssessFinding:
			default:
				t.Errorf("%s advertises %s", stage, name)
			}
		}
	}
	a, c := scripted(t, []script.Turn{text("Done.")}, nil)
	analyze(t, a, input(t, loadSnap(t, "small-healthy.json")))
	if len(c.requests()[0].Tools) != 5 {
		t.Errorf("detection advertises %d tools", len(c.requests()[0].Tools))
	}
}
