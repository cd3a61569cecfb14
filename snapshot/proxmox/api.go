package proxmox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// The wire shapes of the endpoints read, as the PVE 8 API schema documents
// them. Decoders are strict about types (a field of the wrong type is an
// error naming it) and lenient about absence and unknown fields.

// number is a JSON number that PVE sometimes sends as a numeric string.
// Absent, null, "" and non-numeric strings such as "N/A" leave it unset.
type number struct {
	v   float64
	set bool
}

func (n *number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			n.v, n.set = f, true
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: numberType}
	}
	n.v, n.set = f, true
	return nil
}

// text is a string PVE sometimes sends as a number (a vmid list of one).
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
		return nil
	}
	var f json.Number
	if err := json.Unmarshal(b, &f); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: textType}
	}
	*t = text(f.String())
	return nil
}

// clusterResource is one entry of GET /cluster/resources.
type clusterResource struct {
	ID         string `json:"id"`
	Type       string `json:"type"` // node, qemu, lxc, storage, pool, sdn
	Node       string `json:"node"`
	Status     string `json:"status"`
	Name       string `json:"name"`
	VMID       number `json:"vmid"`
	CPU        number `json:"cpu"`
	MaxCPU     number `json:"maxcpu"`
	Mem        number `json:"mem"`
	MaxMem     number `json:"maxmem"`
	Disk       number `json:"disk"`
	MaxDisk    number `json:"maxdisk"`
	Template   number `json:"template"`
	Tags       string `json:"tags"`
	HAState    string `json:"hastate"`
	Pool       string `json:"pool"`
	Lock       string `json:"lock"`
	Uptime     number `json:"uptime"` // seconds; kept.go reads a guest again when it falls
	Storage    string `json:"storage"`
	Content    string `json:"content"`
	PluginType string `json:"plugintype"`
	Shared     number `json:"shared"`
}

// nodeStatus is the answer of GET /nodes/{node}/status: the node's
// figures now. Wait is the share of CPU time waiting on IO, a fraction
// like cpu.
type nodeStatus struct {
	CPU  number `json:"cpu"`
	Wait number `json:"wait"`
	Swap struct {
		Total number `json:"total"`
		Used  number `json:"used"`
		Free  number `json:"free"`
	} `json:"swap"`
}

// clusterStatusEntry is one entry of GET /cluster/status: the cluster
// itself (type "cluster", with quorate) or one of its nodes (type
// "node", with online).
type clusterStatusEntry struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	Quorate number `json:"quorate"`
	Nodes   number `json:"nodes"`
	Online  number `json:"online"`
}

// haStatusEntry is one entry of GET /cluster/ha/status/current: the
// quorum, the master, one node's LRM (type "lrm", its state only in the
// status text) or one HA resource (type "service", sid "vm:100").
type haStatusEntry struct {
	Type         string `json:"type"`
	ID           string `json:"id"`
	Node         string `json:"node"`
	Status       string `json:"status"`
	SID          string `json:"sid"`
	State        string `json:"state"`
	CRMState     string `json:"crm_state"`
	RequestState string `json:"request_state"`
	Timestamp    number `json:"timestamp"`
}

// replicationJob is one entry of GET /nodes/{node}/replication: a
// storage replication job of a guest on that node and its state. Times
// are Unix seconds, 0 for never.
type replicationJob struct {
	ID        string `json:"id"`
	Guest     number `json:"guest"`
	Target    string `json:"target"`
	Schedule  string `json:"schedule"`
	LastSync  number `json:"last_sync"`
	LastTry   number `json:"last_try"`
	FailCount number `json:"fail_count"`
	Error     string `json:"error"`
	Disable   number `json:"disable"`
}

// certificateInfo is one entry of GET /nodes/{node}/certificates/info:
// a certificate file of the node. Times are Unix seconds.
type certificateInfo struct {
	Filename string `json:"filename"`
	Subject  string `json:"subject"`
	NotAfter number `json:"notafter"`
}

// storageConfig is one entry of GET /storage: a storage's configuration,
// cluster-wide. Path is set for storages on a directory (dir, btrfs, and
// the mount point of nfs, cifs and others).
type storageConfig struct {
	Storage string `json:"storage"`
	Type    string `json:"type"`
	Path    string `json:"path"`
	Shared  number `json:"shared"`
	Nodes   text   `json:"nodes"` // "pve1,pve2"; empty: every node
	Disable number `json:"disable"`
}

// disk is one entry of GET /nodes/{node}/disks/list.
type disk struct {
	DevPath string `json:"devpath"`
	Type    string `json:"type"`
	Model   string `json:"model"`
	Serial  string `json:"serial"`
	Health  string `json:"health"`
	Wearout number `json:"wearout"` // percent of life left, or "N/A"
	Used    string `json:"used"`
}

// smart is the answer of GET /nodes/{node}/disks/smart.
type smart struct {
	Health     string      `json:"health"`
	Type       string      `json:"type"` // "ata" (attributes) or "text" (NVMe, SAS and others)
	Attributes []smartAttr `json:"attributes"`
	Text       string      `json:"text"`
	Wearout    number      `json:"wearout"` // percent of life left, when PVE computed it
}

// zpool is one entry of GET /nodes/{node}/disks/zfs.
type zpool struct {
	Name   string `json:"name"`
	Size   number `json:"size"`
	Alloc  number `json:"alloc"`
	Free   number `json:"free"`
	Health string `json:"health"` // ONLINE, DEGRADED, FAULTED, ...
}

// zpoolDetail is the answer of GET /nodes/{node}/disks/zfs/{name}: zpool
// status as a tree of vdevs.
type zpoolDetail struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Errors   string `json:"errors"`
	Scan     string `json:"scan"`
	Children []vdev `json:"children"`
}

// vdev is one line of the zpool status tree. Counters come as numbers
// (PVE 8) or strings (PVE 7).
type vdev struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Read     number `json:"read"`
	Write    number `json:"write"`
	Cksum    number `json:"cksum"`
	Msg      string `json:"msg"`
	Children []vdev `json:"children"`
}

type smartAttr struct {
	ID   text   `json:"id"` // "  5" or 5
	Name string `json:"name"`
	Raw  text   `json:"raw"` // "0", "36 (Min/Max 20/45)"
}

// volume is one entry of GET /nodes/{node}/storage/{storage}/content.
type volume struct {
	VolID   string `json:"volid"`
	Content string `json:"content"`
	VMID    number `json:"vmid"`
	CTime   number `json:"ctime"`
	// Verification is set on a PBS storage's verified volumes.
	Verification *verification `json:"verification"`
}

// notBackedUp is one entry of GET /cluster/backup-info/not-backed-up: a
// guest no enabled backup job selects, as PVE itself judges it.
type notBackedUp struct {
	VMID number `json:"vmid"`
}

// backupJob is one entry of GET /cluster/backup.
type backupJob struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Enabled number `json:"enabled"` // absent means enabled
	All     number `json:"all"`
	VMID    text   `json:"vmid"`
	Exclude text   `json:"exclude"`
	Pool    string `json:"pool"`
	Node    string `json:"node"`
	Storage string `json:"storage"`
}

// task is one entry of GET /nodes/{node}/tasks.
type task struct {
	UPID      string `json:"upid"`
	Node      string `json:"node"`
	Type      string `json:"type"`
	ID        string `json:"id"` // the vmid, or "" for a job over several guests
	User      string `json:"user"`
	StartTime number `json:"starttime"`
	EndTime   number `json:"endtime"`
	Status    string `json:"status"` // "OK", "WARNINGS: n", an error; absent while running
}

// logLine is one entry of GET /nodes/{node}/tasks/{upid}/log.
type logLine struct {
	N number `json:"n"`
	T string `json:"t"`
}

// agentInterfaces is the answer of
// GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces.
type agentInterfaces struct {
	Result []struct {
		Name      string `json:"name"`
		MAC       string `json:"hardware-address"`
		Addresses []struct {
			Address string `json:"ip-address"`
			Type    string `json:"ip-address-type"`
		} `json:"ip-addresses"`
	} `json:"result"`
}

var (
	numberType = reflect.TypeFor[float64]()
	textType   = reflect.TypeFor[string]()
)

// decodeList decodes a JSON array, naming the index of a bad entry.
func decodeList[T any](data []byte) ([]T, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, jsonError(err, "data")
	}
	out := make([]T, 0, len(raws))
	for i, raw := range raws {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, jsonError(err, fmt.Sprintf("data[%d]", i))
		}
		out = append(out, v)
	}
	return out, nil
}

// decodeOne decodes a JSON object.
func decodeOne[T any](data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, jsonError(err, "data")
	}
	return v, nil
}
