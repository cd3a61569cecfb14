package docs

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/patrol"
)

// TestTriggerExamplesMatchTheContract: the trigger request and answer
// of NATS.md pass their schemas, have the shape of the Go values
// marshalled from contracts' types, and the request decodes as the
// writer decodes it. The answer's outcomes in the schema are the code's,
// both ways.
func TestTriggerExamplesMatchTheContract(t *testing.T) {
	doc := readDoc(t, "NATS.md")
	data, _ := docExamples(t, doc)
	schemas := compileSchemas(t)
	req, err := json.Marshal(contracts.TriggerRequest{Resources: []string{"node/pve1"}, Reason: "why"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := json.Marshal(contracts.TriggerAnswer{Outcome: string(patrol.TriggerTaken), RunID: "01J", Resources: []string{"node/pve1"}})
	if err != nil {
		t.Fatal(err)
	}
	for typ, real := range map[string][]byte{"patrold.trigger.request": req, "patrold.trigger.answer": ans} {
		ex, ok := data[typ]
		if !ok {
			t.Errorf("NATS.md has no example for %s", typ)
			continue
		}
		if a, b := sameShape(shape(t, ex), shape(t, real)); len(a)+len(b) > 0 {
			t.Errorf("%s: documented only %v, Go only %v", typ, a, b)
		}
		for name, raw := range map[string][]byte{"NATS.md example": ex, "Go value": real} {
			if err := validate(schemas[typ+".v1.json"], raw); err != nil {
				t.Errorf("%s %s: %v", typ, name, err)
			}
		}
	}
	got, err := contracts.DecodeTriggerRequest(data["patrold.trigger.request"])
	if err != nil || len(got.Resources) == 0 || patrol.CheckScope(got.Resources, got.Reason) != nil {
		t.Errorf("the documented request does not decode to a fit scope: %+v %v", got, err)
	}
	var want []string
	for _, o := range patrol.TriggerOutcomes {
		want = append(want, string(o))
	}
	want = append(want, contracts.TriggerInvalid, contracts.TriggerUnauthenticated)
	sort.Strings(want)
	var enum []string
	for _, v := range readSchema(t, "patrold.trigger.answer.v1.json")["properties"].(map[string]any)["outcome"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	sort.Strings(enum)
	if !slices.Equal(enum, want) {
		t.Errorf("answer outcomes: schema %v, code %v", enum, want)
	}
	if !reflect.DeepEqual(got.Resources, []string{"node/pve1", "vm/101"}) {
		t.Errorf("documented request resources %v", got.Resources)
	}
}
