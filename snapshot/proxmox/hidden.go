package proxmox

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/patrold/patrold/snapshot"
)

// guestKeys are the signal keys of guests: none is evaluated while
// /cluster/resources lists no guest.
var guestKeys = []string{"high_cpu", "high_memory", "high_disk", "backup_failed", "backup_stale", "backup_unscheduled",
	"guest_down", "guest_unreachable", "ha_error", "replication_failed", "snapshot_old", "lock_stuck"}

// namedLimit bounds the guest ids a hidden-guests problem quotes.
const namedLimit = 5

// guestsHidden is the coverage gap of a resource list without any guest
// while the cluster's own configuration names guests: PVE lists only the
// guests the token may VM.Audit, so a token without it sees an empty
// fleet (docs/SOURCES.md#failures-and-offline-nodes). An HA resource or
// a replication job of a guest says so; so do backup jobs naming more
// than one guest, as one id alone may be a deleted guest's. nil when
// guests are listed (templates too) or nothing names one.
func guestsHidden(rs []clusterResource, ha *haIndex, jobs []backupJob, results []nodeResult) *snapshot.Problem {
	//mutate:coverage-hidden-guests-all-empty ./snapshot/proxmox ^TestCoverageHiddenGuests
	if slices.ContainsFunc(rs, func(r clusterResource) bool { return r.Type == "qemu" || r.Type == "lxc" }) {
		return nil
	}
	var named []string
	if ha != nil && len(ha.services) > 0 {
		named = append(named, "HA resources of "+quoteIDs(mapsKeys(ha.services)))
	}
	var repl []string
	for _, r := range results {
		for id := range r.replication {
			repl = append(repl, strconv.FormatInt(id, 10))
		}
	}
	if len(repl) > 0 {
		named = append(named, "replication jobs of "+quoteIDs(repl))
	}
	var ids []string
	for _, j := range jobs {
		if (j.Enabled.set && j.Enabled.v == 0) || (j.Type != "" && j.Type != "vzdump") {
			continue
		}
		for _, id := range splitList(string(j.VMID)) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > 1 {
		named = append(named, "backup jobs of "+quoteIDs(ids))
	}
	if len(named) == 0 {
		return nil
	}
	endpoint := endpointOf([]string{"cluster", "resources"})
	return &snapshot.Problem{ID: SourceProblemID, Index: -1, Field: endpoint, Warning: true,
		Problem: fmt.Sprintf("lists no guest, yet the cluster names guests: %s; grant the API token VM.Audit (PVEAuditor on /vms) for %s",
			strings.Join(named, ", "), strings.Join(guestKeys, ", ")),
		Gap: &snapshot.Gap{Check: "cluster_resources", Keys: guestKeys, Endpoint: endpoint, Privilege: "VM.Audit", Status: 200, Unlisted: true}}
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// quoteIDs names ids sorted, at most namedLimit of them.
func quoteIDs(ids []string) string {
	sort.Strings(ids)
	if len(ids) > namedLimit {
		return strings.Join(ids[:namedLimit], ", ") + fmt.Sprintf(" and %d more", len(ids)-namedLimit)
	}
	return strings.Join(ids, ", ")
}
