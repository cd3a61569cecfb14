package proxmox

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// seedData adds the "data" member of fixture files as fuzz seeds.
func seedData(f *testing.F, files ...string) {
	f.Helper()
	for _, name := range files {
		raw, err := os.ReadFile(filepath.Join("testdata", "api2", "json", filepath.FromSlash(name)))
		if err != nil {
			f.Fatal(err)
		}
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		f.Add([]byte(env.Data))
	}
	for _, s := range []string{`null`, `[]`, `{}`, `[{"vmid":"x"}]`, `[{"vmid":1,"ctime":1e15,"endtime":"99999999999999"}]`, `[{"type":"qemu","vmid":1e300,"maxmem":1e-300,"mem":1e300,"status":"running","node":"n"}]`} {
		f.Add([]byte(s))
	}
}

// valid decodes the resources through the snapshot codec: a mapping may
// only ever produce resources the contract accepts (duplicate ids, which
// the codec drops and reports, come from the input itself).
func valid(t *testing.T, rs []snapshot.Resource) {
	t.Helper()
	data, err := snapshot.Encode(&snapshot.Snapshot{Version: 1, Resources: rs})
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	_, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	for _, p := range probs {
		if p.Field != "id" {
			t.Fatalf("invalid resource: %v", p)
		}
	}
}

func FuzzClusterResources(f *testing.F) {
	seedData(f, "cluster/resources.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := decodeList[clusterResource](data)
		if err != nil {
			return
		}
		cl, err := indexCluster(rs)
		if err != nil {
			return
		}
		s := &Source{opts: DefaultOptions()}
		byNode := map[string]*nodeResult{}
		for _, n := range cl.names {
			if cl.online(n) {
				byNode[n] = &nodeResult{runs: map[int64]backupRun{}, tasksRead: true}
			}
		}
		valid(t, s.build(cl, nil, cl.backupStorages(nil), nil, true, nil, byNode))
	})
}

// FuzzStorageConfig: any GET /storage answer that decodes groups the
// fixture cluster's storages into a partition of them, and the resources
// built from it pass the codec.
func FuzzStorageConfig(f *testing.F) {
	seedData(f, "storage.json")
	raw, err := os.ReadFile(filepath.Join("testdata", "api2", "json", "cluster", "resources.json"))
	if err != nil {
		f.Fatal(err)
	}
	inner, err := unwrapData(raw)
	if err != nil {
		f.Fatal(err)
	}
	rs, err := decodeList[clusterResource](inner)
	if err != nil {
		f.Fatal(err)
	}
	cl, err := indexCluster(rs)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		configs, err := decodeList[storageConfig](data)
		if err != nil {
			return
		}
		var rs []snapshot.Resource
		n := 0
		for _, g := range oneFilesystem(cl.storages, storagePaths(configs)) {
			n += len(g)
			rs = append(rs, groupResource(g))
		}
		if n != len(cl.storages) {
			t.Fatalf("groups hold %d storages of %d", n, len(cl.storages))
		}
		valid(t, rs)
	})
}

func FuzzSmart(f *testing.F) {
	seedData(f, "nodes/pve1/disks/smart/sda.json", "nodes/pve1/disks/smart/nvme0n1.json", "nodes/pve2/disks/smart/sda.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		sm, err := decodeOne[smart](data)
		if err != nil {
			return
		}
		valid(t, []snapshot.Resource{diskResource("pve1", diskRead{disk: disk{DevPath: "/dev/sda"}, smart: &sm})})
	})
}

func FuzzDisks(f *testing.F) {
	seedData(f, "nodes/pve1/disks/list.json", "nodes/pve2/disks/list.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := decodeList[disk](data)
		if err != nil {
			return
		}
		var rs []snapshot.Resource
		for _, d := range ds {
			rs = append(rs, diskResource("pve1", diskRead{disk: d, smart: &smart{}}))
		}
		valid(t, rs)
	})
}

func FuzzTasksAndLog(f *testing.F) {
	seedData(f, "nodes/pve1/tasks.json", "nodes/pve2/tasks.json", "nodes/pve1/tasks-log.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if ts, err := decodeList[task](data); err == nil {
			for _, tk := range byNewest(ts) {
				if r := taskRun(tk); !knownBackupStatus(r.Status) {
					t.Fatalf("status %q", r.Status)
				}
			}
		}
		if lines, err := decodeList[logLine](data); err == nil {
			if r, ok := fromLog(lines, 102, task{}); ok && !knownBackupStatus(r.Status) {
				t.Fatalf("status %q", r.Status)
			}
		}
	})
}

func knownBackupStatus(s string) bool {
	switch s {
	case snapshot.BackupOK, snapshot.BackupFailed, snapshot.BackupRunning, snapshot.BackupWarning:
		return true
	}
	return false
}

func FuzzBackupsAndJobs(f *testing.F) {
	seedData(f, "nodes/pve1/storage/nfs-backup/content.json", "cluster/backup.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if vols, err := decodeList[volume](data); err == nil {
			newest := map[int64]newestBackup{}
			newestVolumes(vols, "storage/pve1/s", newest)
			for _, nb := range newest {
				valid(t, []snapshot.Resource{{ID: "vm/1", Kind: snapshot.KindVM, Backup: backupOf(backupRun{}, false, nb)}})
			}
		}
		if ts, err := decodeList[task](data); err == nil {
			for _, tk := range ts {
				valid(t, []snapshot.Resource{{ID: "vm/1", Kind: snapshot.KindVM, Backup: backupOf(taskRun(tk), true, newestBackup{})}})
			}
		}
		if jobs, err := decodeList[backupJob](data); err == nil {
			covered(jobs, clusterResource{VMID: number{v: 101, set: true}, Node: "pve1"})
		}
	})
}

func FuzzAgent(f *testing.F) {
	seedData(f, "nodes/pve1/qemu/102/agent/network-get-interfaces.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		ifs, err := decodeOne[agentInterfaces](data)
		if err != nil {
			return
		}
		for _, a := range agentAddresses(ifs, nil, 22) {
			if _, _, err := net.SplitHostPort(a); err != nil {
				t.Fatalf("address %q: %v", a, err)
			}
		}
	})
}

func FuzzZFS(f *testing.F) {
	seedData(f, "nodes/pve1/disks/zfs.json", "nodes/pve2/disks/zfs.json", "nodes/pve1/disks/zfs/rpool.json", "nodes/pve2/disks/zfs/tank.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if pools, err := decodeList[zpool](data); err == nil {
			var rs []snapshot.Resource
			for i, p := range pools {
				p.Name = "p" + string(rune('a'+i%26)) + strconv.Itoa(i)
				rs = append(rs, poolResource("pve1", poolRead{pool: p}))
			}
			valid(t, rs)
		}
		if det, err := decodeOne[zpoolDetail](data); err == nil {
			valid(t, []snapshot.Resource{poolResource("pve1", poolRead{pool: zpool{Name: "rpool"}, detail: &det})})
		}
	})
}

// FuzzKeptCopy: a row of source_copies decodes to a copy whose row
// decodes to the same copy, or fails naming its field. The seeds are the
// rows a run over the scale stand-in keeps.
func FuzzKeptCopy(f *testing.F) {
	pve := pvetest.NewScale(f, 1, 4, 0)
	pve.Guest(101, func(g *pvetest.Guest) { g.SnapshotAt = 1790000000 })
	keeper := &rowsKeeper{}
	o := scaleOptions(f, pve)
	o.Keeper, o.Rate = keeper, 1000
	if _, _, err := newSource(f, o).Collect(context.Background()); err != nil {
		f.Fatal(err)
	}
	for _, row := range keeper.rows {
		f.Add(row)
	}
	f.Add([]byte(`{"node":"pve1","read_at":"2026-11-29T10:00:00Z","data":null}`))
	fields := regexp.MustCompile(`^((node|status|lock|uptime|read_at|data): |must be an object|not valid JSON)`)
	f.Fuzz(func(t *testing.T, row []byte) {
		c, err := decodeKept(row)
		if err != nil {
			if !fields.MatchString(err.Error()) {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		d, err := decodeKept(again)
		if err != nil {
			t.Fatalf("kept again as %s: %v", again, err)
		}
		if twice, _ := json.Marshal(d); !bytes.Equal(twice, again) || !d.ReadAt.Equal(c.ReadAt) {
			t.Fatalf("kept again as %s, then as %s", again, twice)
		}
	})
}
