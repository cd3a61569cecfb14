package proxmox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestNodeStatusNamesTheField: a status answer of the wrong type is an
// error naming the field by its path; PVE 7's numbers as strings read as
// PVE 8's numbers.
func TestNodeStatusNamesTheField(t *testing.T) {
	for in, want := range map[string]string{
		`{"swap":{"used":true}}`: "data.swap.used: must be a number, got true",
		`{"wait":[1]}`:           "data.wait: must be a number, got [1]",
		`{"swap":3}`:             "data.swap: must be an object, got number",
	} {
		_, err := decodeOne[nodeStatus]([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", in, err, want)
		}
	}
	node := clusterResource{Node: "pve1", Status: "online"}
	pve8, err := decodeOne[nodeStatus]([]byte(`{"wait":0.125,"swap":{"total":1000,"used":250,"free":750}}`))
	if err != nil {
		t.Fatal(err)
	}
	pve7, err := decodeOne[nodeStatus]([]byte(`{"wait":"0.125","swap":{"total":"1000","used":"250","free":"750"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot.Metrics{}
	want.Set(snapshot.MetricIOWait, 12.5)
	want.Set(snapshot.MetricSwap, 25)
	for name, st := range map[string]nodeStatus{"PVE 8": pve8, "PVE 7": pve7} {
		got := nodeResource(node, &st).Metrics
		if !reflect.DeepEqual(got.Map(), want.Map()) {
			t.Errorf("%s: metrics %v, want %v", name, got, want)
		}
	}
	// A node without swap has no swap figure (not 0 %).
	none, _ := decodeOne[nodeStatus]([]byte(`{"wait":0,"swap":{"total":0,"used":0,"free":0}}`))
	if _, ok := nodeResource(node, &none).Metrics.Get(snapshot.MetricSwap); ok {
		t.Error("a node with no swap has swap_percent")
	}
}

// FuzzNodeStatus: any status answer that decodes maps to a node the
// snapshot contract accepts.
func FuzzNodeStatus(f *testing.F) {
	seedData(f, "nodes/pve1/status.json", "nodes/pve2/status.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeOne[nodeStatus](data)
		if err != nil {
			return
		}
		valid(t, []snapshot.Resource{nodeResource(clusterResource{Node: "pve1", Status: "online"}, &st)})
	})
}

// TestClusterStatusNamesTheField: a /cluster/status entry of the wrong
// type names its index and field; PVE 7's strings read as numbers.
func TestClusterStatusNamesTheField(t *testing.T) {
	_, err := decodeList[clusterStatusEntry]([]byte(`[{"type":"node","online":1},{"type":"cluster","quorate":true}]`))
	if want := "data[1].quorate: must be a number, got true"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	for _, data := range []string{`[{"type":"cluster","name":"c","quorate":0,"nodes":3},{"type":"node","online":1},{"type":"node","online":0}]`,
		`[{"type":"cluster","name":"c","quorate":"0","nodes":"3"},{"type":"node","online":"1"},{"type":"node","online":"0"}]`} {
		st, err := decodeList[clusterStatusEntry]([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := (&cluster{status: st}).clusterResourceOf()
		want := snapshot.Resource{ID: "cluster/c", Kind: snapshot.KindCluster, Name: "c", Quorum: &snapshot.Quorum{Nodes: 3, NodesOnline: 1}}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v %v, want %+v", data, got, ok, want)
		}
	}
	// A node in no cluster: no cluster entry, no cluster resource.
	if r, ok := (&cluster{status: []clusterStatusEntry{{Type: "node", Name: "pve1"}}}).clusterResourceOf(); ok {
		t.Errorf("a lone node has cluster %+v", r)
	}
}

// FuzzClusterStatus: any /cluster/status answer that decodes maps the
// fixture cluster to resources the snapshot contract accepts.
func FuzzClusterStatus(f *testing.F) {
	seedData(f, "cluster/status.json", "cluster/resources.json")
	raw, err := os.ReadFile(filepath.Join("testdata", "api2", "json", "cluster", "resources.json"))
	if err != nil {
		f.Fatal(err)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeList[clusterStatusEntry](data)
		if err != nil {
			return
		}
		rs, _ := decodeList[clusterResource](env.Data)
		cl, err := indexCluster(rs)
		if err != nil {
			t.Fatal(err)
		}
		cl.status = st
		s := &Source{opts: DefaultOptions()}
		valid(t, s.build(cl, nil, cl.backupStorages(nil), nil, true, nil, map[string]*nodeResult{}))
	})
}
