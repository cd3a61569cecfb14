package snapshot

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"
)

// metricMaps are metric sets whose encoding must be a map's, byte for
// byte: every float format boundary, and names needing escapes (HTML,
// control, quote, backslash, non-ASCII, invalid UTF-8, U+2028).
var metricMaps = []map[string]float64{
	nil,
	{},
	{MetricCPU: 12.5},
	{"b": 2, "a": 1, "c": 3, "cpu_percent_avg": 0.1},
	{"zero": 0, "neg_zero": math.Copysign(0, -1), "tiny": 1e-7, "edge_low": 1e-6, "below": 9.999999e-7},
	{"big": 1e21, "edge_high": 9.99999999999e20, "huge": 1.7976931348623157e308, "small": 5e-324, "neg": -1.5e-10},
	{"int": 123456789012345, "frac": 0.30000000000000004, "e20": 1e20, "e-300": 1.5e-300},
	{"<a>&b": 1, "quote\"d": 2, `back\slash`: 3, "tab\there": 4, "nul\x00": 5},
	{"café": 1, "\xff\xfe": 2, "line\u2028sep": 3, "emoji😀": 4, "ctl\x1f": 5},
}

// TestMetricsEncodeAsAMap: Metrics encode exactly as the map they replace,
// under Marshal, MarshalIndent and an Encoder without HTML escaping, also
// inside a resource, and whatever the order the slice was built in.
func TestMetricsEncodeAsAMap(t *testing.T) {
	for _, m := range metricMaps {
		ms := MetricsOf(m)
		reversed := slices.Clone(ms)
		slices.Reverse(reversed)
		for _, got := range []Metrics{ms, reversed} {
			if m == nil {
				got = nil
			}
			checkSame(t, m, got, func(v any) ([]byte, error) { return json.Marshal(v) })
			checkSame(t, m, got, func(v any) ([]byte, error) { return json.MarshalIndent(v, "", " ") })
			checkSame(t, m, got, func(v any) ([]byte, error) {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				err := enc.Encode(v)
				return b.Bytes(), err
			})
			type asMap struct {
				ID      string             `json:"id"`
				Metrics map[string]float64 `json:"metrics,omitempty"`
			}
			type asMetrics struct {
				ID      string  `json:"id"`
				Metrics Metrics `json:"metrics,omitempty"`
			}
			want, err := json.Marshal(asMap{ID: "vm/1", Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := json.Marshal(asMetrics{ID: "vm/1", Metrics: got}); err != nil || string(got) != string(want) {
				t.Fatalf("in a struct: %s, %v; want %s", got, err, want)
			}
		}
	}
}

func checkSame(t *testing.T, m map[string]float64, ms Metrics, enc func(any) ([]byte, error)) {
	t.Helper()
	want, err := enc(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := enc(ms)
	if err != nil {
		t.Fatalf("encode %v: %v", ms, err)
	}
	if string(got) != string(want) {
		t.Fatalf("encoded %s, want the map's %s", got, want)
	}
}

// TestMetricsNotFinite: JSON has no NaN or infinity; encoding one fails,
// naming the problem, as it does for a map.
func TestMetricsNotFinite(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := json.Marshal(map[string]float64{"x": v}); err == nil {
			t.Fatal("the map encoded a non-finite value")
		}
		_, err := json.Marshal(Metrics{{Name: "x", Value: v}})
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("unsupported value: not a finite number")) {
			t.Fatalf("encode %v: error %v, want unsupported value", v, err)
		}
	}
}

// TestMetricsDecodeAsAMap: decoding gives the map's values and errors,
// null clears, an object adds to what is there, a repeated name's last
// value wins.
func TestMetricsDecodeAsAMap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		start map[string]float64
	}{
		{in: `null`},
		{in: `null`, start: map[string]float64{"a": 1}},
		{in: `{}`},
		{in: `{"b":2,"a":1,"b":3}`},
		{in: `{"b":2}`, start: map[string]float64{"a": 1, "b": 9}},
		{in: ` { "x" : 1e-7 } `},
		{in: `{"a":"x"}`},
		{in: `{"a":1e400}`},
		{in: `[1]`},
		{in: `5`},
		{in: `{"a":1`},
	} {
		wantMap := maps(tc.start)
		wantErr := json.Unmarshal([]byte(tc.in), &wantMap)
		got := MetricsOf(maps(tc.start))
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err == nil) != (wantErr == nil) || (err != nil && reflect.TypeOf(err) != reflect.TypeOf(wantErr)) {
			t.Fatalf("%s: error %v (%T), want %v (%T)", tc.in, err, err, wantErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		if want := MetricsOf(wantMap); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %#v, want %#v", tc.in, got, want)
		}
	}
}

func maps(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestMetricsSetGet: Set keeps one sorted entry per name and replaces in
// place; a value built as a literal, unsorted and with a repeated name,
// reads as its normal form (the last of a name wins).
func TestMetricsSetGet(t *testing.T) {
	var m Metrics
	for _, e := range []Metric{{"memory_percent", 1}, {"cpu_percent", 2}, {"disk_percent", 3}, {"cpu_percent", 4}, {"window_seconds", 5}} {
		m.Set(e.Name, e.Value)
	}
	want := Metrics{{"cpu_percent", 4}, {"disk_percent", 3}, {"memory_percent", 1}, {"window_seconds", 5}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("after Set: %v, want %v", m, want)
	}
	if v, ok := m.Get("disk_percent"); v != 3 || !ok {
		t.Fatalf("Get(disk_percent) = %v, %v", v, ok)
	}
	if v, ok := m.Get("usage_percent"); v != 0 || ok {
		t.Fatalf("Get(usage_percent) = %v, %v, want absent", v, ok)
	}
	lit := Metrics{{"b", 1}, {"a", 2}, {"b", 3}}
	if v, _ := lit.Get("b"); v != 3 || lit.Len() != 2 || !lit.Has("a") || lit.Has("c") {
		t.Fatalf("literal: Get(b) = %v, Len %d", v, lit.Len())
	}
	var names []string
	var values []float64
	for n, v := range lit.All() {
		names, values = append(names, n), append(values, v)
	}
	if !reflect.DeepEqual(names, []string{"a", "b"}) || !reflect.DeepEqual(values, []float64{2, 3}) {
		t.Fatalf("All: %v %v", names, values)
	}
	if got := lit.Map(); !reflect.DeepEqual(got, map[string]float64{"a": 2, "b": 3}) {
		t.Fatalf("Map: %v", got)
	}
	if Metrics(nil).Map() != nil || MetricsOf(nil) != nil || MetricsOf(map[string]float64{}) == nil {
		t.Fatal("nil and empty must stay apart, as for a map")
	}
	lit.Set("c", 4) // an unsorted value takes a new name at the end
	if v, ok := lit.Get("c"); v != 4 || !ok {
		t.Fatalf("Set on a literal: %v", lit)
	}
}

// TestMetricsShareNoValues: the decoder hands out neighbouring resources'
// metrics from one array; a Set that adds a name to one never changes
// another's, and one that replaces changes only its own.
func TestMetricsShareNoValues(t *testing.T) {
	doc := `{"version":1,"resources":[
	{"id":"vm/1","kind":"vm","metrics":{"cpu_percent":1,"memory_percent":2}},
	{"id":"vm/2","kind":"vm","metrics":{"memory_percent":3,"cpu_percent":4,"cpu_percent":5}}]}`
	snap, probs, err := Decode([]byte(doc), DecodeOptions{})
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	a, b := &snap.Resources[0].Metrics, &snap.Resources[1].Metrics
	if want := (Metrics{{"cpu_percent", 5}, {"memory_percent", 3}}); !reflect.DeepEqual(*b, want) {
		t.Fatalf("decoded %v, want %v (sorted, the last repeated value)", *b, want)
	}
	a.Set("zz", 9)
	a.Set("cpu_percent", 7)
	if want := (Metrics{{"cpu_percent", 5}, {"memory_percent", 3}}); !reflect.DeepEqual(*b, want) {
		t.Fatalf("neighbour changed to %v", *b)
	}
	if want := (Metrics{{"cpu_percent", 7}, {"memory_percent", 2}, {"zz", 9}}); !reflect.DeepEqual(*a, want) {
		t.Fatalf("set gave %v, want %v", *a, want)
	}
}

// FuzzMetricsJSON holds Metrics to map[string]float64 on any input: the
// same acceptance, the same values, and the same encoding of what was
// decoded.
func FuzzMetricsJSON(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":1,"a":2}`, `{"<&>":1e-7,"b":1e21}`, `{"\u00e9":-0}`, `{"a":"x"}`, `[`, `{"\ud800":1}`} {
		f.Add([]byte(s))
	}
	for _, m := range metricMaps {
		if b, err := json.Marshal(m); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]float64
		mErr := json.Unmarshal(data, &m)
		var ms Metrics
		err := json.Unmarshal(data, &ms)
		if (err == nil) != (mErr == nil) {
			t.Fatalf("%q: error %v, the map's %v", data, err, mErr)
		}
		if err != nil {
			return
		}
		if want := MetricsOf(m); !reflect.DeepEqual(ms, want) {
			t.Fatalf("%q: decoded %v, want %v", data, ms, want)
		}
		want, _ := json.Marshal(m)
		if got, err := json.Marshal(ms); err != nil || string(got) != string(want) {
			t.Fatalf("%q: encoded %s (%v), the map %s", data, got, err, want)
		}
	})
}
