package patrol

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/signals"
)

// encodeReport is json.Marshal(rep), byte for byte. The three long lists
// (signals, unmatched signals, findings) are written by hand instead of
// by reflection, which took 55 ms a run at 10k findings. They are most of
// a report, about 7 MB at that size. The rest of the report is encoded by
// encoding/json with those lists empty, and the lists are put in the
// place it left for them. Anything the hand-written form does not cover
// (a value that is not a finite float, an evidence value of another kind)
// makes it fall back to json.Marshal of the whole report.
// TestEncodeReportIsJSONMarshal holds the two to the same bytes.
func encodeReport(rep *Report) ([]byte, error) {
	rest := *rep
	rest.Signals, rest.UnmatchedSignals, rest.Findings = nil, nil, nil
	head, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(head, reportListsHole)
	if i < 0 || bytes.Contains(head[i+1:], reportListsHole) {
		return json.Marshal(rep)
	}
	// One buffer, sized for the usual lists: the head up to the hole, the
	// lists, the rest of the head.
	out := make([]byte, 0, len(head)+64+len(rep.Signals)*512+len(rep.UnmatchedSignals)*64+len(rep.Findings)*224)
	out = append(out, head[:i]...)
	out, ok := appendReportLists(out, rep)
	if !ok {
		return json.Marshal(rep)
	}
	return append(out, head[i+len(reportListsHole):]...), nil
}

// reportListsHole is what encoding/json writes for the three lists left
// nil: their keys, in the order of Report's fields, at the top level (a
// string value cannot hold it: its quotes would be escaped).
var reportListsHole = []byte(`"signals":null,"unmatched_signals":null,"findings":null`)

// appendReportLists appends the three lists as encoding/json writes them
// in place of reportListsHole.
func appendReportLists(b []byte, rep *Report) ([]byte, bool) {
	ok := true
	b = append(b, `"signals":`...)
	if rep.Signals == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range rep.Signals {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendSignal(b, &rep.Signals[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"unmatched_signals":`...)
	if rep.UnmatchedSignals == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range rep.UnmatchedSignals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = contracts.AppendJSONString(b, string(s.Type))
			b = append(b, `,"resource_id":`...)
			b = contracts.AppendJSONString(b, s.ResourceID)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"findings":`...)
	if rep.Findings == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = contracts.AppendJSONString(b, f.ID)
		b = append(b, `,"key":`...)
		b = contracts.AppendJSONString(b, f.Key)
		b = append(b, `,"resource_id":`...)
		b = contracts.AppendJSONString(b, f.ResourceID)
		b = append(b, `,"category":`...)
		b = contracts.AppendJSONString(b, string(f.Category))
		b = append(b, `,"severity":`...)
		b = contracts.AppendJSONString(b, string(f.Severity))
		b = append(b, `,"state":`...)
		b = contracts.AppendJSONString(b, f.State)
		b = append(b, `,"source":`...)
		b = contracts.AppendJSONString(b, string(f.Source))
		b = append(b, `,"change":`...)
		b = contracts.AppendJSONString(b, string(f.Change))
		if f.Title != "" {
			b = append(b, `,"title":`...)
			b = contracts.AppendJSONString(b, f.Title)
		}
		if f.InhibitedBy != "" {
			b = append(b, `,"inhibited_by":`...)
			b = contracts.AppendJSONString(b, f.InhibitedBy)
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendSignal appends s as encoding/json writes a signals.Signal; ok is
// false for what only encoding/json decides (a float that is not finite,
// an evidence value of a kind not written here).
func appendSignal(b []byte, s *signals.Signal) ([]byte, bool) {
	if !finite(s.Value) || !finite(s.Threshold) {
		return b, false
	}
	b = append(b, `{"type":`...)
	b = contracts.AppendJSONString(b, string(s.Type))
	b = append(b, `,"resource_id":`...)
	b = contracts.AppendJSONString(b, s.ResourceID)
	b = append(b, `,"resource_kind":`...)
	b = contracts.AppendJSONString(b, string(s.ResourceKind))
	if s.ResourceName != "" {
		b = append(b, `,"resource_name":`...)
		b = contracts.AppendJSONString(b, s.ResourceName)
	}
	b = append(b, `,"severity":`...)
	b = contracts.AppendJSONString(b, s.Severity)
	b = append(b, `,"category":`...)
	b = contracts.AppendJSONString(b, s.Category)
	b = append(b, `,"value":`...)
	b = contracts.AppendJSONFloat(b, s.Value)
	b = append(b, `,"threshold":`...)
	b = contracts.AppendJSONFloat(b, s.Threshold)
	b = append(b, `,"summary":`...)
	b = contracts.AppendJSONString(b, s.Summary)
	if len(s.Evidence) > 0 {
		var keys [8]string
		ks := keys[:0]
		for k := range s.Evidence {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		b = append(b, `,"evidence":{`...)
		for i, k := range ks {
			if i > 0 {
				b = append(b, ',')
			}
			b = contracts.AppendJSONString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendEvidenceValue(b, s.Evidence[k]); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendEvidenceValue appends the evidence values detectors write (see
// appendEvidence); ok is false for any other kind.
func appendEvidenceValue(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case float64:
		if finite(x) {
			return contracts.AppendJSONFloat(b, x), true
		}
	case string:
		return contracts.AppendJSONString(b, x), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = contracts.AppendJSONString(b, s)
		}
		return append(b, ']'), true
	}
	return b, false
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// MarshalReport is json.Marshal(rep), byte for byte, written by hand
// where the report is long (encodeReport): what `patrold run --output
// json` prints, indented.
func MarshalReport(rep *Report) ([]byte, error) { return encodeReport(rep) }
