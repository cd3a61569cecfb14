package proxmox

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestHAStatusNamesTheField: an HA status entry of the wrong type names
// its index and field; PVE 7's strings read as numbers; services map to
// their guests and LRMs to their nodes, states read from the status text.
func TestHAStatusNamesTheField(t *testing.T) {
	_, err := decodeList[haStatusEntry]([]byte(`[{"type":"quorum"},{"type":"service","sid":"vm:100","state":3}]`))
	if want := "data[1].state: must be a string, got number"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	_, err = decodeList[haStatusEntry]([]byte(`[{"type":"lrm","timestamp":true}]`))
	if want := "data[0].timestamp: must be a number, got true"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	entries, err := decodeList[haStatusEntry]([]byte(`[{"id":"quorum","type":"quorum","quorate":"1","status":"OK"},` +
		`{"id":"lrm:pve1","node":"pve1","type":"lrm","status":"pve1 (idle, Sun Nov 29 10:00:00 2026)","timestamp":"1796032800"},` +
		`{"id":"lrm:pve2","node":"pve2","type":"lrm","status":"pve2 (maintenance mode, Sun Nov 29 10:00:00 2026)"},` +
		`{"id":"lrm:pve3","type":"lrm","status":"pve3 (unable to read lrm status)"},` +
		`{"id":"service:vm:100","sid":"vm:100","type":"service","state":"error","request_state":"started"},` +
		`{"id":"service:ct:200","sid":"ct:200","type":"service","crm_state":"recovery","request_state":"started"},` +
		`{"id":"service:vm:x","sid":"vm:x","type":"service","state":"error"}]`))
	if err != nil {
		t.Fatal(err)
	}
	got := indexHA(entries)
	want := &haIndex{
		services: map[string]snapshot.HA{"vm/100": {Managed: true, State: "error", Requested: "started"},
			"container/200": {Managed: true, State: "recovery", Requested: "started"}},
		lrms: map[string]snapshot.HA{"pve1": {Managed: true, State: "idle"}, "pve2": {Managed: true, State: "maintenance"},
			"pve3": {Managed: true, State: "unable to read lrm status"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("index %+v, want %+v", got, want)
	}
}

// FuzzHAStatus: any HA status answer that decodes maps to guests and
// nodes the snapshot contract accepts.
func FuzzHAStatus(f *testing.F) {
	seedData(f, "cluster/ha/status/current.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeList[haStatusEntry](data)
		if err != nil {
			return
		}
		x := indexHA(entries)
		var rs []snapshot.Resource
		for node, h := range x.lrms {
			if snapshot.IDProblem("node/"+node) != "" {
				continue // the node's id comes from /cluster/resources, not from here
			}
			r := nodeResource(clusterResource{Node: node, Status: "online"}, nil)
			r.HA = &h
			rs = append(rs, r)
		}
		for id, h := range x.services {
			r := snapshot.Resource{ID: id, Kind: snapshot.KindVM, HA: &h}
			if id[0] == 'c' {
				r.Kind = snapshot.KindContainer
			}
			rs = append(rs, r)
		}
		valid(t, rs)
	})
}
