package docs

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/termsafe"
	"github.com/patrold/patrold/model/ground"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

// listOrderDoc is the order FINDINGS.md states after guard:list-order.
func listOrderDoc(t *testing.T) []string {
	t.Helper()
	text := readDoc(t, "FINDINGS.md")
	i := strings.Index(text, "<!-- guard:list-order -->")
	if i < 0 {
		t.Fatal("FINDINGS.md: no guard:list-order")
	}
	line := strings.SplitN(text[i:], "\n", 3)[1]
	var out []string
	for _, m := range regexp.MustCompile("`([a-z]+ [a-z]+)`").FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// storeOrder files one finding of every source and severity in a real
// store, in the reverse of order, and returns the order List gives.
func storeOrder(t *testing.T, order []string) []string {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	var obs []findings.Observation
	for i := len(order) - 1; i >= 0; i-- {
		src, sev, _ := strings.Cut(order[i], " ")
		obs = append(obs, findings.Observation{Key: "k" + strconv.Itoa(i), ResourceID: "vm/" + strconv.Itoa(i), Category: findings.CategoryGeneral,
			Severity: findings.Severity(sev), Source: findings.Source(src), Title: prompt.Safe("t", 4000)})
	}
	if _, err := st.CommitRun(context.Background(), findings.RunInput{RunID: "r1", Now: at, Observations: obs, Reconcile: true, Policy: findings.DefaultPublishPolicy()},
		func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			return findings.RunRecord{ID: "r1", Trigger: "manual", Status: "issues_found", Analysis: "model", StartedAt: at}, nil, nil
		}); err != nil {
		t.Fatal(err)
	}
	list, err := st.List(context.Background(), findings.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range list {
		out = append(out, string(f.Source)+" "+string(f.Severity))
	}
	return out
}

// TestListOrderDoc: FINDINGS.md states the order a real store lists in,
// for every source and severity.
func TestListOrderDoc(t *testing.T) {
	doc := listOrderDoc(t)
	if len(doc) != 8 {
		t.Fatalf("FINDINGS.md states %d (source, severity) pairs, want all 8: %v", len(doc), doc)
	}
	if got := storeOrder(t, doc); strings.Join(got, ",") != strings.Join(doc, ",") {
		t.Errorf("FINDINGS.md states the list order %v, the store lists %v", doc, got)
	}
}

// TestOutsideTextDoc: FINDINGS.md states the id cap of the code and the
// escapes termsafe writes.
func TestOutsideTextDoc(t *testing.T) {
	data := readDoc(t, "FINDINGS.md")
	doc := strings.Join(strings.Fields(data), " ")
	if want := "`snapshot.MaxIDBytes` (" + strconv.Itoa(snapshot.MaxIDBytes) + ") bytes"; !strings.Contains(doc, want) {
		t.Errorf("FINDINGS.md does not state %q", want)
	}
	for in, stated := range map[string]string{"\x1b": "`\\xNN`", "\n": "`\\n`", "\t": "`\\t`", "\r": "`\\r`", "\u202e": "`\\uNNNN`"} {
		got := termsafe.Field(in)
		shape := regexp.MustCompile(`[0-9a-f]{2,4}$`).ReplaceAllStringFunc(got, func(h string) string { return strings.Repeat("N", len(h)) })
		if "`"+shape+"`" != stated || !strings.Contains(doc, stated) {
			t.Errorf("termsafe writes %q for %q; FINDINGS.md states %s", got, in, stated)
		}
	}
}

// TestApprovalViewDoc: ASSISTANT_SAFETY.md and API.md name the label the
// approval view gives the model's reason, and every field the view adds.
func TestApprovalViewDoc(t *testing.T) {
	for _, doc := range []string{"ASSISTANT_SAFETY.md", "API.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		if !strings.Contains(text, "reason_by") || !strings.Contains(text, assistant.ReasonByModel) {
			t.Errorf("%s does not name reason_by %q", doc, assistant.ReasonByModel)
		}
		if doc != "API.md" {
			continue
		}
		for _, typ := range []any{assistant.ApprovalView{}, assistant.DeclaredAction{}, assistant.ApprovalTarget{}, assistant.ApprovalCondition{}} {
			for _, name := range jsonFieldNames(typ) {
				if !strings.Contains(text, "`"+name+"`") {
					t.Errorf("API.md does not name the approval field %q", name)
				}
			}
		}
	}
}

// jsonFieldNames are the JSON names of v's own fields (not embedded ones).
func jsonFieldNames(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// outsideTextTypes are the types whose prompt.Text fields are the sinks
// of outside text, by the name FINDINGS.md gives them.
var outsideTextTypes = map[string]reflect.Type{
	"findings.Observation":   reflect.TypeFor[findings.Observation](),
	"records.ApprovalRecord": reflect.TypeFor[records.ApprovalRecord](),
	"assistant.Approval":     reflect.TypeFor[assistant.Approval](),
	"assistant.Transcript":   reflect.TypeFor[assistant.Transcript](),
}

// textFields are the fields of the outside-text types that take a
// prompt.Text (or a list of them), sorted.
func textFields() []string {
	text := reflect.TypeFor[prompt.Text]()
	var out []string
	for name, rt := range outsideTextTypes {
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Type == text || (f.Type.Kind() == reflect.Slice && f.Type.Elem() == text) {
				out = append(out, name+"."+f.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestOutsideTextFieldsDoc: FINDINGS.md lists exactly the fields the code
// types as prompt.Text, and a sink of each kind is one.
func TestOutsideTextFieldsDoc(t *testing.T) {
	text := readDoc(t, "FINDINGS.md")
	i := strings.Index(text, "<!-- guard:outside-text -->")
	if i < 0 {
		t.Fatal("FINDINGS.md: no guard:outside-text")
	}
	line := strings.SplitN(text[i:], "\n", 3)[1]
	var doc []string
	for _, m := range regexp.MustCompile("`([A-Za-z]+\\.[A-Za-z]+\\.[A-Za-z]+)`").FindAllStringSubmatch(line, -1) {
		doc = append(doc, m[1])
	}
	slices.Sort(doc)
	got := textFields()
	if !slices.Equal(doc, got) {
		t.Errorf("FINDINGS.md lists the outside-text fields %v, the code types %v", doc, got)
	}
	for _, want := range []string{"findings.Observation.Title", "assistant.Approval.Reason", "assistant.Transcript.FinalAnswer"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not a prompt.Text", want)
		}
	}
}

// TestGroundingDocs: MODEL_STAGES.md states the metric each check key
// names, as model/ground has them, and the safety docs name the marker
// that replaces an unsupported claim in a note or reason.
func TestGroundingDocs(t *testing.T) {
	data := readDoc(t, "MODEL_STAGES.md")
	_, rest, ok := strings.Cut(data, "<!-- guard:check-metrics -->\n")
	if !ok {
		t.Fatal("MODEL_STAGES.md: no guard:check-metrics")
	}
	line, _, _ := strings.Cut(rest, "\n")
	doc := map[string]string{}
	for _, m := range regexp.MustCompile("`([a-z_]+)` `([a-z_]+)`").FindAllStringSubmatch(line, -1) {
		doc[m[1]] = m[2]
	}
	if got := ground.CheckMetrics(); !maps.Equal(doc, got) || len(got) == 0 {
		t.Errorf("MODEL_STAGES.md states the check metrics %v, model/ground has %v", doc, got)
	}
	for _, name := range []string{"ASSISTANT_SAFETY.md", "FINDINGS.md"} {
		data := readDoc(t, name)
		if !strings.Contains(data, "`"+assistant.UngroundedMarker+"`") {
			t.Errorf("%s does not name the marker %q", name, assistant.UngroundedMarker)
		}
	}
}
