package analyst_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/patrol/analyst"
)

// FuzzDecodeReport: report_finding arguments come from the model. Any
// input either decodes into fields within their limits, or fails with an
// INVALID_INPUT tool error naming a field; never a panic.
func FuzzDecodeReport(f *testing.F) {
	for _, seed := range []string{
		`{"resource_id":"storage/pve1/local-zfs","category":"capacity","key":"high_disk","severity":"critical","title":"t","evidence":"usage 96.3"}`,
		`{"resource_id":"vm/1","category":"x","key":"k","severity":"info","title":"t","evidence":"e","extra":1}`,
		`{"resource_id":1}`, `null`, ``, `[]`, `{"title":"` + strings.Repeat("a", 300) + `"}`, `{} {}`, "{\"evidence\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := analyst.DecodeReport(data)
		if err != nil {
			checkToolError(t, err)
			return
		}
		if strings.TrimSpace(args.ResourceID) == "" || strings.TrimSpace(args.Evidence) == "" || strings.TrimSpace(args.Title) == "" {
			t.Fatalf("required field empty: %+v", args)
		}
		if utf8.RuneCountInString(args.Title) > analyst.MaxTitleChars || utf8.RuneCountInString(args.Evidence) > analyst.MaxTextChars {
			t.Fatalf("limits not enforced: %+v", args)
		}
	})
}

// FuzzDecodeAssess: assess_finding arguments.
func FuzzDecodeAssess(f *testing.F) {
	for _, seed := range []string{
		`{"finding_id":"3f1c0aa0b1c2d3e4","verdict":"resolved","evidence":"cpu 35"}`,
		`{"finding_id":"x","verdict":"gone","evidence":"e"}`, `{"finding_id":""}`, `nope`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := analyst.DecodeAssess(data)
		if err != nil {
			checkToolError(t, err)
			return
		}
		switch args.Verdict {
		case analyst.VerdictPresent, analyst.VerdictResolved, analyst.VerdictUncertain:
		default:
			t.Fatalf("verdict %q accepted", args.Verdict)
		}
	})
}

func checkToolError(t *testing.T, err error) {
	t.Helper()
	var te *agent.ToolError
	if !errors.As(err, &te) || te.Code != agent.CodeInvalidInput || te.Details["field"] == "" {
		t.Fatalf("error %v is not an INVALID_INPUT naming a field", err)
	}
	if _, jerr := json.Marshal(te); jerr != nil {
		t.Fatalf("tool error does not encode: %v", jerr)
	}
}
