package prometheus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/snapshot"
)

// FuzzBuild feeds arbitrary query results (the data.result array of a
// Prometheus response) to every mapping. Whatever the labels and values,
// the built snapshot must encode, decode as a valid document and keep only
// valid resources.
func FuzzBuild(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for i, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var resp struct {
			Data struct {
				Result json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), []byte(resp.Data.Result))
	}
	f.Add(uint8(0), []byte(`[{"metric":{"instance":":"},"value":[0,"+Inf"]}]`))
	f.Add(uint8(14), []byte(`[{"metric":{"guest":"/"},"value":[0,"1e300"]}]`))
	f.Add(uint8(6), []byte(`[{"metric":{"node":" ","device":"/dev/"},"value":[0,"-1"]}]`))
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, which uint8, result []byte) {
		var vec model.Vector
		if json.Unmarshal(result, &vec) != nil {
			return
		}
		b := newBuilder(DefaultLabels(), DefaultWindow)
		spec := specs[int(which)%len(specs)]
		for _, s := range vec {
			if s != nil {
				spec.apply(b, s)
			}
		}
		data, err := snapshot.Encode(b.snapshot(now, nil))
		if err != nil {
			t.Fatalf("%s: encode: %v", spec.name, err)
		}
		snap, _, err := snapshot.Decode(data, snapshot.DecodeOptions{})
		if err != nil {
			t.Fatalf("%s: built document rejected: %v", spec.name, err)
		}
		for _, r := range snap.Resources {
			if !r.Kind.Valid() || !strings.HasPrefix(r.ID, string(r.Kind)+"/") {
				t.Fatalf("%s: resource id %q does not match kind %s", spec.name, r.ID, r.Kind)
			}
			for name, v := range r.Metrics.All() {
				if strings.Contains(name, "_percent") && (v < 0 || v > 100) {
					t.Fatalf("%s: %s %s = %v", spec.name, r.ID, name, v)
				}
			}
		}
	})
}

func BenchmarkCollectRecorded(b *testing.B) {
	_, srv := newRecorded(b)
	src, err := New(Options{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := src.CollectAt(b.Context(), evalTime); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild maps a 1000-node fleet (cpu, memory and one filesystem
// each) and validates it through the codec.
func BenchmarkBuild(b *testing.B) {
	var cpu, mem, fs model.Vector
	for i := range 1000 {
		inst := model.LabelValue("host" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ":9100")
		cpu = append(cpu, &model.Sample{Metric: model.Metric{"instance": inst}, Value: 42})
		mem = append(mem, &model.Sample{Metric: model.Metric{"instance": inst}, Value: 55})
		fs = append(fs, &model.Sample{Metric: model.Metric{"instance": inst, "mountpoint": "/"}, Value: 70})
	}
	now := time.Now()
	for b.Loop() {
		bl := newBuilder(DefaultLabels(), DefaultWindow)
		for _, s := range cpu {
			specs[1].apply(bl, s)
		}
		for _, s := range mem {
			specs[3].apply(bl, s)
		}
		for _, s := range fs {
			specs[5].apply(bl, s)
		}
		data, _ := snapshot.Encode(bl.snapshot(now, nil))
		if snap, _, err := snapshot.Decode(data, snapshot.DecodeOptions{}); err != nil || len(snap.Resources) != 2000 {
			b.Fatalf("err %v", err)
		}
	}
}
