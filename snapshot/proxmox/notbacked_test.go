package proxmox

import (
	"testing"
)

// TestNotBackedUpNamesTheField: an entry of the wrong type names its
// index and field; PVE 7's strings read as numbers.
func TestNotBackedUpNamesTheField(t *testing.T) {
	_, err := decodeList[notBackedUp]([]byte(`[{"vmid":100},{"vmid":{}}]`))
	if want := "data[1].vmid: must be a number, got {}"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	list, err := decodeList[notBackedUp]([]byte(`[{"vmid":"201","name":"scratch","type":"lxc"}]`))
	if err != nil || len(list) != 1 || !list[0].VMID.set || list[0].VMID.v != 201 {
		t.Errorf("PVE 7: %+v %v", list, err)
	}
}

// FuzzNotBackedUp: any not-backed-up answer decodes or names its field,
// never panics.
func FuzzNotBackedUp(f *testing.F) {
	seedData(f, "cluster/backup-info/not-backed-up.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeList[notBackedUp](data)
	})
}
