package proxmox

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestUpdatesNameTheField: an update entry of the wrong type names its
// index and field; updates count by package, security ones by the
// repository their origin, section or title names, first in the names;
// an entry without a package is not counted.
func TestUpdatesNameTheField(t *testing.T) {
	_, err := decodeList[aptUpdate]([]byte(`[{"Package":"a"},{"Package":"b","Origin":7}]`))
	if want := "data[1].Origin: must be a string, got number"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	list, err := decodeList[aptUpdate]([]byte(`[{"Package":"zlib1g","Origin":"Debian"},` +
		`{"Package":"libssl3","Origin":"Debian-Security","Section":"libs"},` +
		`{"Package":"pve-manager","Origin":"Proxmox","Title":"Security tools"},` +
		`{"Package":"openssh-server","Origin":"Debian","Section":"bookworm-security/net"},` +
		`{"Package":"","Origin":"Debian-Security"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := &snapshot.Updates{Packages: 4, Security: 2, Names: []string{"libssl3", "openssh-server", "pve-manager", "zlib1g"}}
	if got := pendingUpdates(list); !reflect.DeepEqual(got, want) {
		t.Errorf("updates %+v, want %+v", got, want)
	}
	if got, want := pendingUpdates(nil), (&snapshot.Updates{}); !reflect.DeepEqual(got, want) {
		t.Errorf("none: %+v, want %+v", got, want)
	}
}

// FuzzUpdates: any apt update answer that decodes maps to a node the
// snapshot contract accepts.
func FuzzUpdates(f *testing.F) {
	seedData(f, "nodes/pve1/apt/update.json", "nodes/pve2/apt/update.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := decodeList[aptUpdate](data)
		if err != nil {
			return
		}
		r := nodeResource(clusterResource{Node: "pve1", Status: "online"}, nil)
		r.Updates = pendingUpdates(list)
		valid(t, []snapshot.Resource{r})
	})
}
