package analyst

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/patrold/patrold/agent"
)

// Limits on model-supplied text, in characters.
const (
	MaxTitleChars    = 200
	MaxTextChars     = 4000 // description, recommendation, evidence
	MaxKeyChars      = 64
	MaxResourceChars = 256
)

// Refusal reasons (details.reason of POLICY_BLOCKED results).
const (
	ReasonOutOfScope      = "out_of_scope"
	ReasonAlreadyReported = "already_reported"
	ReasonAlreadyAssessed = "already_assessed"
	ReasonDisclosure      = "policy_disclosure"
)

// decodeArgs decodes tool arguments strictly: unknown fields and trailing
// data are refused. The runtime has checked them against the schema
// already; this is the handler's own line of defence.
func decodeArgs(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("arguments", "%v", err)
	}
	if dec.More() {
		return invalid("arguments", "trailing data after the JSON object")
	}
	return nil
}

func invalid(field, format string, args ...any) *agent.ToolError {
	return agent.NewToolError(agent.CodeInvalidInput, field+": "+format, args...).With("field", field)
}

func notFound(field, format string, args ...any) *agent.ToolError {
	return agent.NewToolError(agent.CodeNotFound, field+": "+format, args...).With("field", field)
}

func refused(reason, format string, args ...any) *agent.ToolError {
	return agent.NewToolError(agent.CodePolicyBlocked, format, args...).With("reason", reason)
}

// ReportArgs are the arguments of report_finding.
type ReportArgs struct {
	ResourceID     string `json:"resource_id"`
	Category       string `json:"category"`
	Key            string `json:"key"`
	Severity       string `json:"severity"`
	Title          string `json:"title"`
	Description    string `json:"description"`
	Recommendation string `json:"recommendation"`
	Evidence       string `json:"evidence"`
}

// DecodeReport decodes and checks report_finding arguments. Errors are
// *agent.ToolError with code INVALID_INPUT naming the field.
func DecodeReport(raw json.RawMessage) (ReportArgs, error) {
	var a ReportArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	for _, f := range []struct {
		name, value string
		max         int
		required    bool
	}{
		{"resource_id", a.ResourceID, MaxResourceChars, true},
		{"category", a.Category, MaxKeyChars, true},
		{"key", a.Key, MaxKeyChars, true},
		{"severity", a.Severity, MaxKeyChars, true},
		{"title", a.Title, MaxTitleChars, true},
		{"description", a.Description, MaxTextChars, false},
		{"recommendation", a.Recommendation, MaxTextChars, false},
		{"evidence", a.Evidence, MaxTextChars, true},
	} {
		if err := checkText(f.name, f.value, f.max, f.required); err != nil {
			return a, err
		}
	}
	return a, nil
}

// AssessArgs are the arguments of assess_finding.
type AssessArgs struct {
	FindingID string `json:"finding_id"`
	Verdict   string `json:"verdict"`
	Evidence  string `json:"evidence"`
}

// Verdicts of assess_finding.
const (
	VerdictPresent   = "present"
	VerdictResolved  = "resolved"
	VerdictUncertain = "uncertain"
)

// DecodeAssess decodes and checks assess_finding arguments.
func DecodeAssess(raw json.RawMessage) (AssessArgs, error) {
	var a AssessArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	if err := checkText("finding_id", a.FindingID, MaxKeyChars, true); err != nil {
		return a, err
	}
	switch a.Verdict {
	case VerdictPresent, VerdictResolved, VerdictUncertain:
	default:
		return a, invalid("verdict", "%q is not one of present, resolved, uncertain", a.Verdict)
	}
	return a, checkText("evidence", a.Evidence, MaxTextChars, true)
}

func checkText(field, v string, maxChars int, required bool) error {
	switch {
	case !utf8.ValidString(v):
		return invalid(field, "must be valid UTF-8")
	case required && strings.TrimSpace(v) == "":
		return invalid(field, "required")
	case utf8.RuneCountInString(v) > maxChars:
		return invalid(field, "longer than %d characters", maxChars)
	}
	return nil
}
