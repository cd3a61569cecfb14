package proxmox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestAgentAskedOnlyWhereConfigured: PVE refuses an agent request for a
// VM whose config does not enable the agent ("No QEMU guest agent
// configured"), so patrold does not send it. A config it could not read
// says nothing: that VM is asked as before.
func TestAgentAskedOnlyWhereConfigured(t *testing.T) {
	pve := pvetest.New(t)
	o := testOptions(t, pve.Server)
	o.TokenID, o.TokenSecretFile = pvetest.TokenID, filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(o.TokenSecretFile, []byte(pvetest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	vm := func(id int) string {
		return fmt.Sprintf(`{"id":"qemu/%d","type":"qemu","vmid":%d,"name":"g%d","node":"pve1","status":"running","cpu":0.1,"maxcpu":4,"mem":2e9,"maxmem":8e9,"uptime":600,"template":0}`, id, id, id)
	}
	list := []string{`{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368}`}
	for id := 100; id <= 104; id++ {
		list = append(list, vm(id))
	}
	pve.Set("cluster/resources", "["+strings.Join(list, ",")+"]")
	configs := map[int]string{
		100: `{"name":"g100","agent":"1","net0":"virtio=BC:24:11:00:00:64,bridge=vmbr0"}`,
		101: `{"name":"g101","agent":"enabled=1,fstrim_cloned_disks=1","net0":"virtio=BC:24:11:00:00:65,bridge=vmbr0"}`,
		102: `{"name":"g102","agent":"0","net0":"virtio=BC:24:11:00:00:66,bridge=vmbr0"}`,
		103: `{"name":"g103","net0":"virtio=BC:24:11:00:00:67,bridge=vmbr0"}`,
	}
	for id, c := range configs {
		pve.Set(fmt.Sprintf("nodes/pve1/qemu/%d/config", id), c)
	}
	pve.Fail("nodes/pve1/qemu/104/config", 500, "unable to read config")
	for _, id := range []int{100, 101, 104} {
		pve.Set(fmt.Sprintf("nodes/pve1/qemu/%d/agent/network-get-interfaces", id),
			fmt.Sprintf(`{"result":[{"name":"eth0","hardware-address":"bc:24:11:00:00:%02x","ip-addresses":[{"ip-address-type":"ipv4","ip-address":"192.0.2.%d","prefix":24}]}]}`, id, id))
	}
	snap, _, err := newSource(t, o).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if u := pve.Unexpected(); len(u) != 0 {
		t.Errorf("asked what no config enables: %v", u)
	}
	got := map[string][]string{}
	for _, r := range snap.Resources {
		if strings.HasPrefix(r.ID, "vm/") {
			got[r.ID] = r.Addresses
		}
	}
	want := map[string][]string{"vm/100": {"192.0.2.100:22"}, "vm/101": {"192.0.2.101:22"}, "vm/102": nil, "vm/103": nil, "vm/104": {"192.0.2.104:22"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
}

func TestAgentEnabled(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "enabled=1": true, "enabled=1,type=virtio": true, "1,fstrim_cloned_disks=1": true,
		"fstrim_cloned_disks=1,enabled=1": true, "0": false, "enabled=0": false, "0,type=isa": false, "": false, "yes": true, "off": false} {
		if got := (guestConfig{"agent": v}).agentEnabled(); got != want {
			t.Errorf("agent %q: enabled %v, want %v", v, got, want)
		}
	}
	if (guestConfig{}).agentEnabled() {
		t.Error("no agent property: enabled, want not")
	}
}
