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
// (br-lan skipped, wg0 kept); it names no storage parent; everything
// else is as collected in full.
func TestConfigNotReadFallsBackToNames(t *testing.T) {
	fake, srv := newFake(t)
	fake.fail["nodes/pve1/qemu/101/config"] = true
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: "node/pve3", Index: -1, Field: "node/pve3", Problem: "offline in /cluster/resources: its status, replication, certificates, updates, disks, ZFS pools, tasks, guest configs and snapshots were not read"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/qemu/101/config", Warning: true, Problem: "node pve1: HTTP 500 storage 'nfs-backup' is not online"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
	full := readGolden(t, "cluster.golden.json")
	for i, r := range full.Snapshot.Resources {
		if r.ID == "vm/101" {
			full.Snapshot.Resources[i].Addresses = []string{"10.99.0.1:22"}
			full.Snapshot.Resources[i].Parents = []string{"cluster/pve-prod"}
			// Its config unread, whether it starts at boot is unknown.
			g := *full.Snapshot.Resources[i].Guest
			g.OnBoot = nil
			full.Snapshot.Resources[i].Guest = &g
		}
	}
	if !reflect.DeepEqual(snap, full.Snapshot) {
		got, _ := snapshot.Encode(snap)
		t.Errorf("snapshot differs from the full one but vm/101's addresses and onboot:\n%s", got)
	}
}

// TestGuestStorageParents: a guest's volumes name their storages, which
// become its parents as the storage resources the cluster reports them
// through (a node-local storage of the guest's node, a shared one by
// name). CD-ROMs, passthrough devices, bind mounts, unused disks and a
// storage the cluster does not report name none. The rest of the
// snapshot is as collected in full.
func TestGuestStorageParents(t *testing.T) {
	fake, srv := newFake(t)
	fake.body["nodes/pve1/qemu/101/config"] = `{"data": {"name": "db-1", "agent": "1", "net0": "virtio=BC:24:11:2E:5A:01,bridge=vmbr0",
		"scsi0": "local-lvm:vm-101-disk-0,size=32G", "virtio1": "bulk:vm-101-disk-1,size=1T", "sata0": "/dev/disk/by-id/ata-X,size=2T",
		"ide2": "local:iso/debian.iso,media=cdrom", "efidisk0": "local-lvm:vm-101-disk-2,size=4M", "unused0": "nfs-backup:vm-101-disk-9",
		"tpmstate0": "nfs-backup:vm-101-disk-3,size=4M", "scsi9": "gone:vm-101-disk-4", "scsihw": "virtio-scsi-single"}}`
	fake.body["nodes/pve2/lxc/201/config"] = `{"data": {"hostname": "scratch", "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:3C:00:C9",
		"rootfs": "local-lvm:vm-201-disk-0,size=8G", "mp0": "/mnt/data,mp=/data", "mp1": "local:201/vm-201-disk-1.raw,mp=/srv"}}`
	snap, _, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	full := readGolden(t, "cluster.golden.json")
	byID := map[string]*snapshot.Resource{}
	for i := range full.Snapshot.Resources {
		byID[full.Snapshot.Resources[i].ID] = &full.Snapshot.Resources[i]
	}
	// nfs-backup is shared (reported through pve1); pve2's local is one
	// filesystem with cloud-init and snippets, reported as cloud-init.
	byID["vm/101"].Parents = []string{"storage/pve1/bulk", "storage/pve1/local-lvm", "storage/pve1/nfs-backup", "cluster/pve-prod"}
	byID["container/201"].Parents = []string{"storage/pve2/cloud-init", "storage/pve2/local-lvm", "cluster/pve-prod"}
	if !reflect.DeepEqual(snap, full.Snapshot) {
		got, _ := snapshot.Encode(snap)
		t.Errorf("snapshot differs from the full one but the two guests' parents:\n%s", got)
	}
}

// TestConfigStorages: each volume key names its storage once, sorted.
func TestConfigStorages(t *testing.T) {
	cfg := guestConfig{"scsi0": "b:vm-1-disk-0,size=1G", "scsi1": "a:vm-1-disk-1", "virtio0": "b:vm-1-disk-2", "ide0": "none,media=cdrom",
		"sata1": "c:vm-1-disk-3,media=disk", "net0": "virtio=BC:24:11:2E:5A:01,bridge=vmbr0", "scsihw": "virtio-scsi-pci",
		"mpx": "d:vm-1-disk-4", "rootfs": "e:subvol-1-disk-0,size=8G", "mp3": "f:subvol-1-disk-1,mp=/x", "unused1": "g:vm-1-disk-5",
		"bootdisk": "scsi0", "ide3": "none"}
	if got, want := cfg.storages(), []string{"a", "b", "c", "e", "f"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("storages %q, want %q", got, want)
	}
	if got := guestConfig(nil).storages(); got != nil {
		t.Fatalf("an unread config names %q", got)
	}
}
