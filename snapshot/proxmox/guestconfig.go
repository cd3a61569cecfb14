package proxmox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// guestConfig is the answer of GET /nodes/{node}/qemu/{vmid}/config or
// /nodes/{node}/lxc/{vmid}/config: each key's value as PVE writes it.
// Numbers (cores, memory on PVE 7) are kept as their text. Values that
// are neither (an LXC config's raw "lxc" pairs) are left out.
type guestConfig map[string]string

// decodeGuestConfig decodes a config object. Anything but an object is
// an error naming the data member.
func decodeGuestConfig(data []byte) (guestConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, jsonError(err, "data")
	}
	if raw == nil {
		return nil, fmt.Errorf("data: want a guest config object, got null")
	}
	out := guestConfig{}
	for k, v := range raw {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("data.%s: %w", k, err)
			}
			out[k] = s
		case len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')):
			out[k] = string(v)
		}
	}
	return out, nil
}

// properties splits a PVE property string ("virtio=BC:24:11:2E:5A:01,
// bridge=vmbr0" or "local-lvm:vm-100-disk-0,size=32G"). An item without
// "=" is the value of defaultKey. Keys are lower case; a later item of a
// key wins.
func properties(s, defaultKey string) map[string]string {
	out := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			k, v = defaultKey, item
		}
		out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return out
}

// nic is one network device of a guest config.
type nic struct {
	Key    string // net0
	MAC    string // lower case, colon separated; "" when absent or malformed
	Bridge string
	Name   string // the interface name inside a container (LXC only)
}

// qemuModels are the NIC models of a QEMU netN entry ("virtio=<mac>").
var qemuModels = []string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3", "e1000-82540em", "e1000-82544gc",
	"e1000-82545em", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet"}

// nics lists the config's network devices (net0, net1, ...), by key.
//   - QEMU: "virtio=BC:24:11:2E:5A:01,bridge=vmbr0"; the MAC is the
//     model's value, or macaddr.
//   - LXC: "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:2E:5A:02".
func (c guestConfig) nics() []nic {
	var out []nic
	for k, v := range c {
		n, ok := strings.CutPrefix(k, "net")
		if !ok || n == "" {
			continue
		}
		if _, err := strconv.Atoi(n); err != nil {
			continue
		}
		p := properties(v, "model")
		d := nic{Key: k, Bridge: p["bridge"], Name: p["name"]}
		mac := p["hwaddr"]
		if mac == "" {
			mac = p["macaddr"]
		}
		for _, m := range qemuModels {
			if mac == "" {
				mac = p[m]
			}
		}
		d.MAC = normalMAC(mac)
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// normalMAC is a 48-bit MAC in lower case with colons, or "".
func normalMAC(s string) string {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return ""
	}
	return hw.String()
}

// readConfig reads one guest's config, or uses the kept copy while
// nothing says it changed (kept.go), and says when it was read; nil when
// neither is at hand. Why is
// a problem of the node: a warning unless the node stopped answering. A
// guest removed or migrated since /cluster/resources was read has no
// config here, and without one only the name rules judge its agent's
// interfaces; nothing patrolled is left out.
func (w *worker) readConfig(g clusterResource) (guestConfig, time.Time) {
	c, _ := w.readKept(g, partConfig, []string{"nodes", w.work.name, g.Type, strconv.FormatInt(vmid(g), 10), "config"}, func(d []byte) error {
		_, err := decodeGuestConfig(d)
		return err
	}, nil)
	if c == nil {
		return nil, time.Time{}
	}
	cfg, err := decodeGuestConfig(c.Data)
	if err != nil {
		return nil, time.Time{}
	}
	return cfg, c.ReadAt
}

// storages are the names of the storages the config's volumes are on,
// sorted, each once:
//   - QEMU disks (ideN, sataN, scsiN, virtioN, efidisk0, tpmstate0):
//     "local-lvm:vm-100-disk-0,size=32G"; a CD-ROM (media=cdrom) is
//     left out, its image is no volume of the guest;
//   - LXC volumes (rootfs, mpN): "local-zfs:subvol-101-disk-0,size=8G".
//
// A passthrough device or bind mount (an absolute path), "none" and
// unused disks (unusedN: the guest does not use them) name no storage.
func (c guestConfig) storages() []string {
	var out []string
	for k, v := range c {
		if !volumeKey(k) {
			continue
		}
		p := properties(v, "file")
		if p["media"] == "cdrom" {
			continue
		}
		st, _, ok := strings.Cut(p["file"], ":")
		if !ok || st == "" || strings.HasPrefix(st, "/") || slices.Contains(out, st) {
			continue
		}
		out = append(out, st)
	}
	sort.Strings(out)
	return out
}

// volumeKey reports whether a config key is one of a guest's volumes.
func volumeKey(k string) bool {
	if k == "rootfs" || k == "efidisk0" || k == "tpmstate0" {
		return true
	}
	for _, prefix := range []string{"ide", "sata", "scsi", "virtio", "mp"} {
		if n, ok := strings.CutPrefix(k, prefix); ok && n != "" {
			if _, err := strconv.Atoi(n); err == nil {
				return true
			}
		}
	}
	return false
}

// agentEnabled says whether the VM's config enables the guest agent: its
// agent property ("[enabled=]<bool>[,fstrim_cloned_disks=..][,type=..]")
// is true. PVE refuses an agent request otherwise.
func (c guestConfig) agentEnabled() bool {
	for i, part := range strings.Split(c["agent"], ",") {
		k, v, named := strings.Cut(part, "=")
		if !named {
			k, v = "enabled", k
			if i > 0 {
				continue
			}
		}
		if k == "enabled" {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "1", "yes", "on", "true":
				return true
			}
			return false
		}
	}
	return false
}
