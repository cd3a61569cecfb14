package proxmox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestGuestConfigNICs: the network devices of QEMU configs (model=MAC,
// model plus macaddr; PVE 7 numbers and PVE 8 strings) and LXC configs
// (hwaddr, raw lxc pairs), whole.
func TestGuestConfigNICs(t *testing.T) {
	cases := []struct {
		file string
		want []nic
	}{
		{"nodes/pve1/qemu/101/config.json", []nic{{Key: "net0", MAC: "bc:24:11:2e:5a:01", Bridge: "vmbr0"}}},
		{"nodes/pve1/qemu/102/config.json", []nic{
			{Key: "net0", MAC: "bc:24:11:aa:bb:cc", Bridge: "vmbr0"},
			{Key: "net1", MAC: "bc:24:11:aa:bb:cd", Bridge: "vmbr1"}}},
		{"nodes/pve2/lxc/200/config.json", []nic{{Key: "net0", MAC: "bc:24:11:3c:00:c8", Bridge: "vmbr0", Name: "eth0"}}},
	}
	for _, c := range cases {
		cfg := readConfigFixture(t, c.file)
		if got := cfg.nics(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: nics\n%+v\nwant\n%+v", c.file, got, c.want)
		}
	}
	// Numbers are kept as text, raw lxc pairs are left out.
	cfg := readConfigFixture(t, "nodes/pve2/lxc/200/config.json")
	if cfg["memory"] != "512" || cfg["rootfs"] != "local-lvm:vm-200-disk-0,size=10G" {
		t.Errorf("config %+v", cfg)
	}
	if _, ok := cfg["lxc"]; ok {
		t.Errorf("raw lxc pairs kept: %q", cfg["lxc"])
	}
	// A NIC without a readable MAC is listed without one; netX keys that
	// are not numbered devices are no NICs.
	odd := guestConfig{"net0": "virtio=not-a-mac,bridge=vmbr0", "net1": "bridge=vmbr1", "netfoo": "virtio=BC:24:11:00:00:01", "net": "x"}
	want := []nic{{Key: "net0", Bridge: "vmbr0"}, {Key: "net1", Bridge: "vmbr1"}}
	if got := odd.nics(); !reflect.DeepEqual(got, want) {
		t.Errorf("odd nics %+v, want %+v", got, want)
	}
}

func readConfigFixture(t *testing.T, file string) guestConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "api2", "json", filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := unwrapData(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := decodeGuestConfig(inner)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cfg
}

// TestGuestConfigRejectsNonObjects: an answer that is not an object is an
// error naming the data member.
func TestGuestConfigRejectsNonObjects(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:     "data:",
		`null`:   "data: want a guest config object, got null",
		`"net0"`: "data:",
	} {
		_, err := decodeGuestConfig([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want one starting %q", in, err, want)
		}
	}
}

func TestProperties(t *testing.T) {
	got := properties("local-lvm:vm-100-disk-0, IOThread=1,size=32G,,size=33G", "file")
	want := map[string]string{"file": "local-lvm:vm-100-disk-0", "iothread": "1", "size": "33G"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("properties %v, want %v", got, want)
	}
}

// TestAgentAddressesPreferConfiguredMAC: the interface whose MAC is a
// configured NIC's is the guest's, even when docker0 comes first and the
// NIC's name looks like a container bridge (br-lan). Without a match,
// interfaces are judged by name.
func TestAgentAddressesPreferConfiguredMAC(t *testing.T) {
	ifs, err := decodeOne[agentInterfaces]([]byte(`{"result":[
	 {"name":"docker0","hardware-address":"02:42:5e:aa:00:01","ip-addresses":[{"ip-address":"172.17.0.1"}]},
	 {"name":"br-lan","hardware-address":"BC:24:11:2E:5A:01","ip-addresses":[{"ip-address":"192.0.2.11"}]},
	 {"name":"wg0","ip-addresses":[{"ip-address":"10.99.0.1"}]},
	 {"name":"eth1","hardware-address":"bc:24:11:2e:5a:02","ip-addresses":[{"ip-address":"198.51.100.2"}]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	nics := []nic{{Key: "net0", MAC: "bc:24:11:2e:5a:01"}, {Key: "net1", MAC: "bc:24:11:2e:5a:02"}, {Key: "net2"}}
	if got, want := agentAddresses(ifs, nics, 22), []string{"192.0.2.11:22", "198.51.100.2:22"}; !reflect.DeepEqual(got, want) {
		t.Errorf("by MAC: %v, want %v", got, want)
	}
	// No configured MAC matches (a config not read, a NIC replaced): by name.
	for _, nics := range [][]nic{nil, {{Key: "net0", MAC: "bc:24:11:ff:ff:ff"}}} {
		if got, want := agentAddresses(ifs, nics, 22), []string{"10.99.0.1:22", "198.51.100.2:22"}; !reflect.DeepEqual(got, want) {
			t.Errorf("nics %v: by name %v, want %v", nics, got, want)
		}
	}
}

func unwrapData(raw []byte) ([]byte, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	err := json.Unmarshal(raw, &env)
	return env.Data, err
}

func FuzzGuestConfig(f *testing.F) {
	seedData(f, "nodes/pve1/qemu/101/config.json", "nodes/pve1/qemu/102/config.json", "nodes/pve2/lxc/200/config.json", "nodes/pve2/lxc/201/config.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := decodeGuestConfig(data)
		if err != nil {
			return
		}
		for _, n := range cfg.nics() {
			if n.MAC != "" && normalMAC(n.MAC) != n.MAC {
				t.Fatalf("nic %+v: MAC not normal", n)
			}
		}
	})
}

// TestConfigNotReadFallsBackToNames: a guest whose config fails to read
// is a problem of its node, and its agent's interfaces are judged by name
// (br-lan skipped, wg0 kept); everything else is as collected in full.
func TestConfigNotReadFallsBackToNames(t *testing.T) {
	fake, srv := newFake(t)
	fake.fail["nodes/pve1/qemu/101/config"] = true
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: "node/pve3", Index: -1, Field: "node/pve3", Problem: "offline in /cluster/resources: its disks, vzdump tasks, local backup volumes and guest addresses were not read"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/qemu/101/config", Problem: "node pve1: HTTP 500 storage 'nfs-backup' is not online"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
	full := readGolden(t, "cluster.golden.json")
	for i, r := range full.Snapshot.Resources {
		if r.ID == "vm/101" {
			full.Snapshot.Resources[i].Addresses = []string{"10.99.0.1:22"}
		}
	}
	if !reflect.DeepEqual(snap, full.Snapshot) {
		got, _ := snapshot.Encode(snap)
		t.Errorf("snapshot differs from the full one but vm/101's addresses:\n%s", got)
	}
}
