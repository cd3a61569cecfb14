package proxmox

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/patrold/patrold/snapshot"
)

// cluster is the indexed answer of /cluster/resources.
type cluster struct {
	nodes    map[string]clusterResource
	names    []string          // node names, sorted
	guests   []clusterResource // qemu and lxc, templates left out, by vmid
	storages []storageEntry    // shared storage once, by id
	problems []snapshot.Problem
	// status is GET /cluster/status, nil when it was not read.
	status []clusterStatusEntry
	// ha is GET /cluster/ha/status/current, nil when it was not read.
	ha *haIndex
}

// clusterResourceOf is the cluster resource of GET /cluster/status, the
// parent of the nodes and guests; false for a node that is in no cluster
// or a status that was not read. Quorum is set when the answer gave it.
func (c *cluster) clusterResourceOf() (snapshot.Resource, bool) {
	for _, e := range c.status {
		if e.Type != "cluster" || e.Name == "" {
			continue
		}
		id := "cluster/" + e.Name
		if snapshot.IDProblem(id) != "" || strings.HasPrefix(e.Name, "-") {
			return snapshot.Resource{}, false
		}
		r := snapshot.Resource{ID: id, Kind: snapshot.KindCluster, Name: e.Name}
		if e.Quorate.set {
			q := &snapshot.Quorum{Quorate: e.Quorate.v == 1}
			if e.Nodes.set && e.Nodes.v >= 0 && e.Nodes.v <= math.MaxInt32 {
				q.Nodes = int64(e.Nodes.v)
			}
			for _, n := range c.status {
				if n.Type == "node" && n.Online.set && n.Online.v == 1 {
					q.NodesOnline++
				}
			}
			r.Quorum = q
		}
		return r, true
	}
	return snapshot.Resource{}, false
}

// storageEntry is one storage resource: a node-local storage, or a shared
// one reported once through the node that represents it.
type storageEntry struct {
	clusterResource
	shared bool
}

func (e storageEntry) id() string { return "storage/" + e.Node + "/" + e.Storage }

func (e storageEntry) hasContent(c string) bool {
	return slices.Contains(splitList(e.Content), c)
}

func indexCluster(rs []clusterResource) (*cluster, error) {
	c := &cluster{nodes: map[string]clusterResource{}}
	shared := map[string][]clusterResource{}
	for i, r := range rs {
		switch r.Type {
		case "node":
			if r.Node == "" {
				return nil, fmt.Errorf("data[%d].node: required for a node", i)
			}
			c.nodes[r.Node] = r
		case "qemu", "lxc":
			if !r.VMID.set || r.VMID.v <= 0 || r.VMID.v != float64(int64(r.VMID.v)) {
				return nil, fmt.Errorf("data[%d].vmid: want a positive integer for a guest", i)
			}
			if r.Template.v != 0 {
				continue // templates are not run, so not patrolled
			}
			c.guests = append(c.guests, r)
		case "storage":
			if r.Node == "" || r.Storage == "" {
				return nil, fmt.Errorf("data[%d]: node and storage are required for a storage", i)
			}
			if r.Shared.v != 0 {
				shared[r.Storage] = append(shared[r.Storage], r)
				continue
			}
			c.storages = append(c.storages, storageEntry{clusterResource: r})
		}
	}
	for _, entries := range shared {
		c.storages = append(c.storages, storageEntry{clusterResource: representative(entries), shared: true})
	}
	for name := range c.nodes {
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	sort.Slice(c.guests, func(i, j int) bool { return c.guests[i].VMID.v < c.guests[j].VMID.v })
	sort.Slice(c.storages, func(i, j int) bool { return c.storages[i].id() < c.storages[j].id() })
	return c, nil
}

// representative picks the entry a shared storage is reported through: the
// first node by name that has it available, else the first node by name.
func representative(entries []clusterResource) clusterResource {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Node < entries[j].Node })
	for _, e := range entries {
		if e.Status == "available" {
			return e
		}
	}
	return entries[0]
}

func (c *cluster) online(node string) bool { return c.nodes[node].Status == "online" }

// backupStorages is the storage to read backups from: the configured names,
// or every storage with content "backup". Configured names the cluster does
// not have are problems.
func (c *cluster) backupStorages(names []string) []storageEntry {
	var out []storageEntry
	for _, e := range c.storages {
		if (len(names) == 0 && e.hasContent("backup")) || slices.Contains(names, e.Storage) {
			out = append(out, e)
		}
	}
	for i, n := range names {
		if !slices.ContainsFunc(out, func(e storageEntry) bool { return e.Storage == n }) {
			c.problems = append(c.problems, snapshot.Problem{ID: "(source)", Index: -1,
				Field:   fmt.Sprintf("source.proxmox.backups.storages[%d]", i),
				Problem: fmt.Sprintf("storage %q is not in /cluster/resources; backups of every guest left out", n)})
		}
	}
	return out
}

func vmid(r clusterResource) int64 { return int64(r.VMID.v) }

func guestID(r clusterResource) string {
	kind := snapshot.KindVM
	if r.Type == "lxc" {
		kind = snapshot.KindContainer
	}
	return string(kind) + "/" + strconv.FormatInt(vmid(r), 10)
}

// splitList splits PVE's list strings: tags ("a;b"), content ("backup,iso"),
// vmid lists ("101,102"). Empty items are dropped.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' || r == '\t' })
}
