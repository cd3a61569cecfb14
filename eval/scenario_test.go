package eval

import (
	"strings"
	"testing"
	"testing/fstest"
)

const okScenario = `name: ok
description: fine
snapshot:
  version: 1
  taken_at: "2026-11-29T06:00:00Z"
  resources:
    - {id: node/pve1, kind: node, metrics: {cpu_percent: 10}}
expect:
  signals: []
`

// TestParseNamesTheField: every refusal names the field at fault.
func TestParseNamesTheField(t *testing.T) {
	if _, err := Parse([]byte(okScenario)); err != nil {
		t.Fatalf("valid scenario: %v", err)
	}
	snap := "snapshot: {version: 1, taken_at: \"2026-11-29T06:00:00Z\", resources: [{id: node/pve1, kind: node}]}\n"
	cases := []struct{ doc, want string }{
		{"name: Bad Name\ndescription: d\n" + snap, "name: must be 1-64 lower-case letters"},
		{"name: a\n" + snap, "description: required"},
		{"name: a\ndescription: d\n", "snapshot: required (or generate)"},
		{"name: a\ndescription: d\nsurprise: 1\n" + snap, "scenario: line 3: an unknown key"},
		{"name: a\ndescription: d\nsnapshot: {version: 1, resources: []}\n", "snapshot.taken_at: required"},
		{"name: a\ndescription: d\nsnapshot: {version: 1, taken_at: \"2026-11-29T06:00:00Z\", resources: [{id: vm/1, kind: vm, metrics: {cpu_percent: 300}}]}\n", "snapshot: "},
		{"name: a\ndescription: d\n" + snap + "generate: {resources: 5, at: \"2026-11-29T06:00:00Z\"}\n", "snapshot: give snapshot or generate, not both"},
		{"name: a\ndescription: d\ngenerate: {resources: 0, at: \"2026-11-29T06:00:00Z\"}\n", "generate.resources: outside 1..20000"},
		{"name: a\ndescription: d\ngenerate: {resources: 5}\n", "generate.at: required"},
		{"name: a\ndescription: d\n" + snap + "expect: {signals: [{type: hot, resource_id: node/pve1, severity: warning}]}\n", "expect.signals[0].type: not a signal type"},
		{"name: a\ndescription: d\n" + snap + "expect: {signals: [{type: high_cpu, resource_id: node/zz, severity: warning}]}\n", "expect.signals[0].resource_id: not a resource of the snapshot"},
		{"name: a\ndescription: d\n" + snap + "expect: {signals: [{type: high_cpu, resource_id: node/pve1, severity: info}]}\n", "expect.signals[0].severity: not warning or critical"},
		{"name: a\ndescription: d\n" + snap + "expect: {findings: [{resource_id: node/pve1, category: moods, key: k, severity: warning, title: t, evidence: e}]}\n", "expect.findings[0].category: not a finding category"},
		{"name: a\ndescription: d\n" + snap + "expect: {findings: [{resource_id: node/pve1, category: general, key: k, severity: warning, title: t}]}\n", "expect.findings[0].evidence: required"},
		{"name: a\ndescription: d\n" + snap + "expect: {verdicts: [{resource_id: node/pve1, category: general, key: k, verdict: present, evidence: e}]}\n", "expect.verdicts[0]: needs before:"},
		{"name: a\ndescription: d\n" + snap + "before: {" + strings.TrimSuffix(snap, "\n") + "}\nexpect: {verdicts: [{resource_id: node/pve1, category: general, key: k, verdict: gone, evidence: e}]}\n", "expect.verdicts[0].verdict: not present, resolved or uncertain"},
		{"name: a\ndescription: d\nbefore: {}\n" + snap, "before.snapshot: required"},
		{"name: a\ndescription: d\n" + snap + "history: [{resource_id: node/zz, points: [{at: \"2026-11-28T06:00:00Z\", value: 5}]}]\n", "history[0].resource_id: not a resource of the snapshot"},
		{"name: a\ndescription: d\n" + snap + "history: [{resource_id: node/pve1}]\n", "history[0].points: required"},
		{"name: a\ndescription: d\n" + snap + "history: [{resource_id: node/pve1, points: [{value: 5}]}]\n", "history[0].points[0].at: required"},
		{"name: a\ndescription: d\n" + snap + "history: [{resource_id: node/pve1, points: [{at: \"2026-11-29T06:00:00Z\", value: 5}]}]\n", "history[0].points[0].at: must be before the snapshot's taken_at"},
		{"name: a\ndescription: d\n" + snap + "history: [{resource_id: node/pve1, points: [{at: \"2026-11-28T06:00:00Z\", value: 5}, {at: \"2026-11-28T07:00:00Z\", value: 101}]}]\n", "history[0].points[1].value: must be a percentage from 0 to 100"},
		{"name: a\ndescription: d\n" + snap + "history: [{resource_id: node/pve1, points: [{at: \"2026-11-28T06:00:00Z\", value: .nan}]}]\n", "history[0].points[0].value: must be a percentage from 0 to 100"},
		{strings.Repeat("#", MaxScenarioBytes+1), "larger than"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80q: %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestLoadFSRefusesDuplicatesAndEmpty(t *testing.T) {
	_, err := LoadFS(fstest.MapFS{"a.yaml": {Data: []byte(okScenario)}, "b.yaml": {Data: []byte(okScenario)}})
	if err == nil || err.Error() != "b.yaml: name: already the name of a.yaml" {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := LoadFS(fstest.MapFS{"x.txt": {Data: []byte("x")}}); err == nil || err.Error() != "scenarios: no *.yaml file" {
		t.Fatalf("empty: %v", err)
	}
	if _, err := LoadFS(fstest.MapFS{"a.yaml": {Data: []byte("name: [")}}); err == nil || !strings.HasPrefix(err.Error(), "a.yaml: scenario: ") {
		t.Fatalf("broken: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(okScenario))
	f.Add([]byte("name: a\ndescription: d\ngenerate: {resources: 3, at: \"2026-11-29T06:00:00Z\"}\n"))
	f.Add([]byte("before: {snapshot: {}}\n"))
	f.Add([]byte(okScenario + "history: [{resource_id: node/pve1, points: [{at: \"2026-11-28T06:00:00Z\", value: 5}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if s.Snapshot() == nil || !namePattern.MatchString(s.Name) {
			t.Fatalf("accepted %q without a fleet or a valid name", data)
		}
		if s.Before != nil && s.BeforeSnapshot() == nil {
			t.Fatalf("accepted %q with a before: that builds nothing", data)
		}
		for _, sr := range s.History {
			for _, p := range sr.Points {
				if !p.At.Before(s.Snapshot().TakenAt) || !(p.Value >= 0 && p.Value <= 100) {
					t.Fatalf("accepted %q with a history point %+v after the snapshot or not a percentage", data, p)
				}
			}
		}
	})
}
