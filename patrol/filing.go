package patrol

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/shares"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
)

var titles = map[signals.Type]string{
	signals.TypeSmartFailure:        "SMART problems on disk %s",
	signals.TypeHighCPU:             "High CPU on %s",
	signals.TypeHighMemory:          "High memory on %s",
	signals.TypeHighDisk:            "High disk usage on %s",
	signals.TypeBackupFailed:        "Backup failed for %s",
	signals.TypeBackupStale:         "Backup of %s is stale",
	signals.TypeGuestUnreachable:    "%s is unreachable",
	signals.TypeNodeOffline:         "Node %s is offline",
	signals.TypeDiskTemperature:     "Disk %s is running hot",
	signals.TypeDiskWear:            "Disk %s is wearing out",
	signals.TypeZFSPoolDegraded:     "ZFS pool %s is not healthy",
	signals.TypeBackupJobFailed:     "Backup datastore %s has failing jobs or verifications",
	signals.TypeCapacityForecast:    "%s is filling up",
	signals.TypeHighSwap:            "High swap on %s",
	signals.TypeHighIOWait:          "High IO wait on %s",
	signals.TypeQuorumLost:          "Cluster %s has lost quorum",
	signals.TypeHAError:             "HA trouble on %s",
	signals.TypeLockStuck:           "%s is stuck locked",
	signals.TypeGuestDown:           "%s is down",
	signals.TypeBackupUnscheduled:   "%s is in no backup job",
	signals.TypeSnapshotOld:         "%s has an old snapshot",
	signals.TypeReplicationFailed:   "Replication of %s is failing",
	signals.TypeCertificateExpiring: "Certificate of %s expires soon",
	signals.TypeUpdatesPending:      "Package updates pending on %s",
	signals.TypeBackupUnverified:    "Backups of %s are not verified",
	signals.TypeZFSScrubOverdue:     "ZFS pool %s needs a scrub",
}

// titleFor is fmt.Sprintf(titles[t], name) for templates with one %s and
// no other verb (all of them), without formatting.
func titleFor(t signals.Type, name string) string {
	tpl := titles[t]
	if pre, post, ok := strings.Cut(tpl, "%s"); ok && !strings.Contains(pre, "%") && !strings.Contains(post, "%") {
		return pre + name + post
	}
	return fmt.Sprintf(tpl, name)
}

var recommendations = map[signals.Type]string{
	signals.TypeSmartFailure:        "Check the disk's SMART report and plan a replacement; make sure backups of the data on it are current.",
	signals.TypeHighCPU:             "Find the processes or guests using the CPU; consider moving load or adding capacity.",
	signals.TypeHighMemory:          "Find what is using memory; consider raising the allocation or moving load.",
	signals.TypeHighDisk:            "Free space or grow the volume before it fills; check for runaway logs, old snapshots and backups.",
	signals.TypeBackupFailed:        "Read the backup job's log for the error and run the backup again once it is fixed.",
	signals.TypeBackupStale:         "Check that the backup job is scheduled and succeeding for this guest.",
	signals.TypeGuestUnreachable:    "Check the guest's console, network configuration and the service on the probed port.",
	signals.TypeNodeOffline:         "Check the node's power, network and cluster membership (pvecm status); its guests are not running while it is down.",
	signals.TypeDiskTemperature:     "Check the cooling and airflow around the disk and the load on it; sustained heat shortens its life.",
	signals.TypeDiskWear:            "Plan the disk's replacement before its life runs out; make sure backups of the data on it are current.",
	signals.TypeZFSPoolDegraded:     "Run zpool status on the node, replace or reattach the failing device and scrub the pool; zpool clear once it is fixed.",
	signals.TypeBackupJobFailed:     "Open the failed job's last task log on the backup server; for failed verifications, take a new backup of the guest and verify it again.",
	signals.TypeCapacityForecast:    "Find what is growing (backups, snapshots, logs) and prune it or add capacity before the projected date.",
	signals.TypeHighSwap:            "Find the guests or processes under memory pressure; add memory, lower ballooning targets or move load.",
	signals.TypeHighIOWait:          "Find the disk or storage that is slow or saturated (iostat, zpool iostat) and the guests driving it.",
	signals.TypeQuorumLost:          "Run pvecm status on a node: bring the missing nodes or the corosync links back; do not change expected votes while the others may still run.",
	signals.TypeHAError:             "Run ha-manager status: for a service in error, fix its cause, then set it disabled and started again; for a node, check pve-ha-lrm and its watchdog, or leave maintenance when done.",
	signals.TypeLockStuck:           "Check the guest's last task log for why the operation stopped; once nothing runs on the guest, release it with qm unlock or pct unlock.",
	signals.TypeSnapshotOld:         "Delete the snapshot once it is no longer needed (qm delsnapshot or pct delsnapshot): old snapshots grow and slow the guest's disks.",
	signals.TypeBackupUnscheduled:   "Add the guest to a backup job (Datacenter > Backup), or tag it nobackup if it is meant to have none.",
	signals.TypeGuestDown:           "Read the guest's last start task and the node's journal (OOM killer, QEMU or LXC errors) for why it stopped, then start it; set onboot 0 if it is meant to stay off.",
	signals.TypeReplicationFailed:   "Run pvesr status on the source node and read the job's log: check the target node, its storage and the network between them, then schedule the job now.",
	signals.TypeCertificateExpiring: "Renew it: pvenode acme cert renew for an ACME certificate, pvecm updatecerts --force for the cluster's own; upload a new custom one before the date.",
	signals.TypeBackupUnverified:    "Read the verify task log on the backup server; for a failed verification take a new backup and verify it; otherwise add or fix a verify job on the datastore.",
	signals.TypeUpdatesPending:      "Review the pending updates (apt list --upgradable on the node) and install them in a maintenance window, security ones first: migrate guests away, apt full-upgrade, reboot for a new kernel.",
	signals.TypeZFSScrubOverdue:     "Run zpool scrub on the pool and check that the monthly scrub timer runs; for errors found or repaired, read zpool status -v and check the devices.",
}

// maxSummaryRunes caps a signal's summary (which quotes capped names and
// errors) once it is neutralised.
const maxSummaryRunes = 512

// Caps on a deterministic finding's title and evidence text.
const (
	maxTitleRunes    = 200
	maxEvidenceRunes = 4000
)

// safeSignals neutralises and caps the untrusted text signals carry: the
// resource's name, the summary that quotes it and a backup error, string
// evidence. So the report, finding text, events, the API and a later
// prompt inherit no live instruction from a source.
func safeSignals(sigs []signals.Signal, memo safeMemo) {
	for i := range sigs {
		safeSignal(&sigs[i], memo)
	}
}

// safeSignalsParallel is safeSignals over contiguous shares of sigs, one
// goroutine (with its own memo) each: SafeText is pure and every signal
// has its own evidence map, so the result is the same as in one pass.
// Short lists are done in one pass.
func safeSignalsParallel(sigs []signals.Signal, plain *prompt.PlainMemo) {
	shares.Each(len(sigs), minShare, func(lo, hi int) { safeSignals(sigs[lo:hi], newSafeMemo(plain)) })
}

// observationsFor files each signal as an observation (observationFor),
// in shares like safeSignalsParallel.
func observationsFor(sigs []signals.Signal, plain *prompt.PlainMemo) []findings.Observation {
	obs := make([]findings.Observation, len(sigs))
	shares.Each(len(sigs), minShare, func(lo, hi int) {
		m := safeMemo{plain: plain, buf: new([]byte)}
		for i := lo; i < hi; i++ {
			obs[i] = m.observationFor(&sigs[i])
		}
	})
	return obs
}

// minShare is the fewest signals worth a goroutine of their own.
const minShare = 512

func safeSignal(s *signals.Signal, memo safeMemo) {
	s.ResourceName = memo.name(s.ResourceName)
	s.Summary = memo.plain.SafeText(s.Summary, maxSummaryRunes)
	for k, v := range s.Evidence {
		switch x := v.(type) {
		case string:
			// Most evidence text is safe as it is: only a changed text is
			// stored again (a string stored in an any is a new box).
			if safe := memo.text(x, signals.MaxErrorRunes); safe != x {
				s.Evidence[k] = safe
			}
		case []string:
			safe := make([]string, len(x))
			for j := range x {
				safe[j] = memo.name(x[j])
			}
			s.Evidence[k] = safe
		}
	}
}

// safeMemo remembers what prompt.SafeText made of a text during one run,
// and asks the runner's plain-text memo (prompt.PlainMemo, kept from run
// to run) for the rest.
// SafeText is a pure function and a fleet repeats the same few names,
// nodes, tags, recommendations and evidence values (metric names, ages,
// errors) many times, so each is neutralised once. Summaries, titles and
// evidence text, unique to their signal, are not remembered here; the
// plain memo knows those a run before found plain. The zero memo
// remembers nothing.
type safeMemo struct {
	seen  map[safeKey]prompt.Text
	plain *prompt.PlainMemo
	buf   *[]byte // room to write the evidence text in (nil: none)
}

// newSafeMemo is an empty memo over plain (nil: none).
func newSafeMemo(plain *prompt.PlainMemo) safeMemo {
	return safeMemo{seen: map[safeKey]prompt.Text{}, plain: plain, buf: new([]byte)}
}

type safeKey struct {
	text     string
	maxRunes int
}

// safe is prompt.Safe, remembered.
func (m safeMemo) safe(s string, maxRunes int) prompt.Text {
	k := safeKey{s, maxRunes}
	if v, ok := m.seen[k]; ok {
		return v
	}
	v := m.plain.Remembered(s, maxRunes)
	if m.seen != nil {
		m.seen[k] = v
	}
	return v
}

// text is prompt.SafeText, remembered.
func (m safeMemo) text(s string, maxRunes int) string { return m.safe(s, maxRunes).String() }

// name is prompt.Name, remembered.
func (m safeMemo) name(s string) string { return m.text(s, prompt.MaxNameRunes) }

// safeName is prompt.SafeName, remembered.
func (m safeMemo) safeName(s string) prompt.Text { return m.safe(s, prompt.MaxNameRunes) }

// safeNames is prompt.SafeNames, remembered: a new slice, nil stays nil.
func (m safeMemo) safeNames(list []string) []prompt.Text {
	if list == nil {
		return nil
	}
	out := make([]prompt.Text, len(list))
	for i, n := range list {
		out[i] = m.safeName(n)
	}
	return out
}

// observation files s (already safe) as observationFor does, with the
// tags and node of r, its resource; names, node, tags and the
// recommendation remembered.
func (m safeMemo) observation(s *signals.Signal, r *snapshot.Resource) findings.Observation {
	o := m.observationFor(s)
	o.ResourceTags = m.safeNames(r.Tags)
	o.ResourceNode = m.safeName(nodeOf(r))
	return o
}

// nodeOf is the node a resource is on: a node's own name (its id after
// "node/"), else its parent's when the parent is a node; "" otherwise.
func nodeOf(r *snapshot.Resource) string {
	switch {
	case r.Kind == snapshot.KindNode:
		return strings.TrimPrefix(r.ID, "node/")
	case strings.HasPrefix(r.Parent, "node/"):
		return strings.TrimPrefix(r.Parent, "node/")
	}
	return ""
}

// observationFor files a signal deterministically, with templated text.
// The signal's text is already safe (safeSignals); the id is capped too.
// The texts are built as prompt.Text: SafeText is stable, so what
// safeSignals made stays as it is, and the joined evidence is checked
// whole.
func observationFor(s *signals.Signal) findings.Observation { return safeMemo{}.observationFor(s) }

// observationFor is observationFor with the name and recommendation
// remembered.
func (m safeMemo) observationFor(s *signals.Signal) findings.Observation {
	name := s.ResourceName
	if name == "" {
		name = prompt.Name(s.ResourceID)
	}
	return findings.Observation{
		Key: string(s.Type), ResourceID: s.ResourceID, ResourceKind: string(s.ResourceKind), ResourceName: m.safeName(s.ResourceName),
		Category: findings.Category(s.Category), Severity: findings.Severity(s.Severity), Source: findings.SourceDeterministic,
		Title: m.plain.Remembered(titleFor(s.Type, name), maxTitleRunes), Description: m.plain.Remembered(s.Summary, maxSummaryRunes),
		Recommendation: m.safe(recommendations[s.Type], maxSummaryRunes), Evidence: m.plain.Remembered(m.evidenceText(s), maxEvidenceRunes),
	}
}

// evidenceText is evidenceText, written in the memo's room.
func (m safeMemo) evidenceText(s *signals.Signal) string {
	if m.buf == nil {
		return evidenceText(s)
	}
	*m.buf = appendEvidenceText((*m.buf)[:0], s)
	return string(*m.buf)
}

// evidenceText renders structured evidence as stable "k=v" pairs, each
// value as json.Marshal writes it (appendEvidence writes the common
// values itself).
func evidenceText(s *signals.Signal) string {
	return string(appendEvidenceText(make([]byte, 0, 24*len(s.Evidence)), s))
}

// appendEvidenceText appends evidenceText(s) to b.
func appendEvidenceText(b []byte, s *signals.Signal) []byte {
	var keys [8]string
	ks := keys[:0]
	for k := range s.Evidence {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for i, k := range ks {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = appendEvidence(b, s.Evidence[k])
	}
	return b
}

// appendEvidence appends v as json.Marshal encodes it: the kinds
// detectors write directly (appendEvidenceValue), anything else through
// json.Marshal (nothing for a value it refuses).
func appendEvidence(b []byte, v any) []byte {
	if out, ok := appendEvidenceValue(b, v); ok {
		return out
	}
	enc, _ := json.Marshal(v)
	return append(b, enc...)
}

// RunCompleted is the data of a patrold.run.completed event.
type RunCompleted struct {
	RunID         string         `json:"run_id"`
	Trigger       Trigger        `json:"trigger"`
	Status        string         `json:"status"`
	StatusReasons []string       `json:"status_reasons"`
	Analysis      string         `json:"analysis"`
	DurationMS    int64          `json:"duration_ms"`
	Resources     map[string]int `json:"resources"`
	Signals       int            `json:"signals"`
	Findings      map[string]int `json:"findings"` // by change kind
	Resolved      int            `json:"resolved"`
	Errors        []string       `json:"errors"`
	// Scope is set for a scoped run, as its report records it.
	Scope *Scope `json:"scope,omitempty"`
}

// record renders the run record and its completion event.
func record(rep *Report, complete bool) (findings.RunRecord, []findings.OutboxDraft, error) {
	data, err := encodeReport(rep)
	if err != nil {
		return findings.RunRecord{}, nil, fmt.Errorf("encode run report: %w", err)
	}
	fin := rep.FinishedAt
	rec := findings.RunRecord{
		ID: rep.RunID, Trigger: string(rep.Trigger), Status: rep.Status, Analysis: rep.Analysis,
		StartedAt: rep.StartedAt, FinishedAt: &fin, Complete: complete, Report: data,
		Exchange: rep.exchange, CostUSD: rep.Usage.CostUSD, Summary: summarise(rep),
	}
	byChange := map[string]int{}
	for _, f := range rep.Findings {
		byChange[string(f.Change)]++
	}
	subject, typ := contracts.RunSubject()
	ev := findings.OutboxDraft{Subject: subject, Type: typ, Data: RunCompleted{
		RunID: rep.RunID, Trigger: rep.Trigger, Status: rep.Status, StatusReasons: rep.StatusReasons, Analysis: rep.Analysis,
		DurationMS: rep.DurationMS, Resources: rep.Resources, Signals: len(rep.Signals), Findings: byChange,
		Resolved: len(rep.Resolved), Errors: rep.Errors, Scope: rep.Scope,
	}}
	return rec, []findings.OutboxDraft{ev}, nil
}

// summarise is the run list's view of a report.
func summarise(rep *Report) *findings.RunSummary {
	total := 0
	for _, n := range rep.Resources {
		total += n
	}
	return &findings.RunSummary{
		DurationMS: rep.DurationMS, StatusReasons: append([]string{}, rep.StatusReasons...), Resources: total,
		InvalidResources: len(rep.InvalidResources), Signals: len(rep.Signals), Findings: len(rep.Findings),
		Resolved: len(rep.Resolved), Errors: len(rep.Errors), SourceRequests: rep.SourceRequests,
	}
}

// patrold's own finding about its source (a synthetic finding: recorded and
// published, never investigated).
const (
	SourceResourceID = findings.SyntheticResourcePrefix + "source"
	KeySourceFailing = "source_failing"
)

// KeyCoverageGap is the key of patrold's finding about a check its source
// could not evaluate (docs/PATROL_ARCHITECTURE.md#coverage-gaps).
const KeyCoverageGap = "coverage_gap"

// CoverageGapResourceID is the resource of the coverage_gap finding of
// check on a source: under the source, one per check; member is the
// source of several it is about, or "".
func CoverageGapResourceID(member, check string) string {
	if member != "" {
		return SourceResourceID + "/" + member + "/coverage/" + check
	}
	return SourceResourceID + "/coverage/" + check
}

// coverageGaps are the observations of the collection's coverage gaps:
// one warning per source and check, naming every endpoint refused or
// not served, in the order first seen.
func coverageGaps(gaps []snapshot.Problem) []findings.Observation {
	var out []findings.Observation
	var evidence []string
	at := map[string]int{}
	for _, p := range gaps {
		g := p.Gap
		id := CoverageGapResourceID(p.Source, g.Check)
		i, seen := at[id]
		if !seen {
			i, at[id] = len(out), len(out)
			evidence = append(evidence, "check="+strconv.Quote(g.Check)+" keys="+strconv.Quote(strings.Join(g.Keys, ",")))
			keys := strings.Join(g.Keys, ", ")
			short := keys
			if len(g.Keys) > maxTitleKeys {
				short = strings.Join(g.Keys[:maxTitleKeys], ", ") + " and " + strconv.Itoa(len(g.Keys)-maxTitleKeys) + " more"
			}
			name := "check " + g.Check
			if p.Source != "" {
				name = "check " + g.Check + " of source " + p.Source
			}
			out = append(out, findings.Observation{
				Key: KeyCoverageGap, ResourceID: id, ResourceKind: "patrold", ResourceName: prompt.SafeName(name),
				Category: findings.CategoryReliability, Severity: findings.SeverityWarning, Source: findings.SourceDeterministic,
				Title:          prompt.Safe("patrold cannot evaluate "+g.Check+" ("+short+")", maxTitleRunes),
				Description:    prompt.Safe("The source's answer to "+g.Endpoint+" left "+keys+" unevaluated, so none of their findings is opened or resolved: "+p.Problem, maxSummaryRunes),
				Recommendation: prompt.Safe(gapAdvice(g), maxSummaryRunes),
			})
		}
		evidence[i] += " endpoint=" + strconv.Quote(g.Endpoint) + " status=" + strconv.Itoa(g.Status)
		if g.Privilege != "" {
			evidence[i] += " privilege=" + strconv.Quote(g.Privilege)
		}
	}
	for i := range out {
		out[i].Evidence = prompt.Safe(evidence[i], maxEvidenceRunes)
	}
	return out
}

// maxTitleKeys is how many of a gap's keys its title names.
const maxTitleKeys = 3

// gapAdvice is what resolves a gap: the privilege, or a newer PVE.
func gapAdvice(g *snapshot.Gap) string {
	switch {
	case g.Status == 403:
		return "Grant the source's API token " + g.Privilege + " (a role on the path the endpoint names); the finding resolves at the next complete run that reads it."
	case g.Privilege != "":
		return "The answer left out what the cluster's own configuration names: grant the source's API token " + g.Privilege +
			"; until then nothing it left out is resolved by its absence. The finding resolves at the next complete run that reads it."
	case g.Status == 501:
		return "This version of the API does not serve " + g.Endpoint + "; upgrade it to evaluate the check. The finding resolves at the next complete run that reads it."
	}
	return "Check what the source's API token may see; the finding resolves at the next complete run that reads it."
}

// memberFailing is the observation a run files for a source of several
// that collected nothing (its own finding, one per source).
func memberFailing(name string, problems []snapshot.Problem) findings.Observation {
	msg := ""
	for _, p := range problems {
		if p.SourceFailed() && p.Source == name {
			msg = p.Problem
			break
		}
	}
	return findings.Observation{
		Key: KeySourceFailing, ResourceID: SourceResourceID + "/" + name, ResourceKind: "patrold", ResourceName: prompt.SafeName("snapshot source " + name),
		Category: findings.CategoryReliability, Severity: findings.SeverityCritical, Source: findings.SourceDeterministic,
		Title:          prompt.Safe("patrold cannot collect from source "+name, maxTitleRunes),
		Description:    prompt.Safe("The last run could not collect from source "+name+", so what it covers is not being checked (and none of its findings resolves): "+msg, maxSummaryRunes),
		Recommendation: prompt.Safe("Check the sources entry "+name+" and its collector; the finding resolves at the next run that collects from it.", maxSummaryRunes),
		Evidence:       prompt.Safe("source="+strconv.Quote(name)+" error="+strconv.Quote(msg), maxEvidenceRunes),
	}
}

// NetworkResourceID is the resource of patrold's finding about a
// network (probe.NetworkOf) its prober could not send to.
func NetworkResourceID(network string) string {
	return snapshot.CanonicalID(findings.SyntheticResourcePrefix + "network/" + network)
}

// networkUnroutable is the observation a run files for a network the
// prober had no route to: the guests in it are not probed, their
// reachability unknown (one finding per network, their parent).
func networkUnroutable(u probe.Unroutable) findings.Observation {
	n := strconv.Itoa(u.Addresses)
	return findings.Observation{
		Key: findings.KeyNetworkUnroutable, ResourceID: NetworkResourceID(u.Network), ResourceKind: "patrold",
		ResourceName: prompt.SafeName("network " + u.Network), Category: findings.CategoryReliability,
		Severity: findings.SeverityWarning, Source: findings.SourceDeterministic,
		Title:          prompt.Safe("patrold has no route to network "+u.Network, maxTitleRunes),
		Description:    prompt.Safe("The patrol host could not send to "+n+" guest address(es) in "+u.Network+", so those guests' reachability is unknown (and none of their unreachable findings resolves): "+u.Error, maxSummaryRunes),
		Recommendation: prompt.Safe("Check the patrol host's routes and addresses towards "+u.Network+"; the finding resolves at the next run that can probe it.", maxSummaryRunes),
		Evidence:       prompt.Safe("network="+strconv.Quote(u.Network)+" addresses="+n+" error="+strconv.Quote(u.Error), maxEvidenceRunes),
	}
}

// sourceFailing is the observation a run files when it cannot collect.
func sourceFailing(err error) findings.Observation {
	return findings.Observation{
		Key: KeySourceFailing, ResourceID: SourceResourceID, ResourceKind: "patrold", ResourceName: prompt.SafeName("snapshot source"),
		Category: findings.CategoryReliability, Severity: findings.SeverityCritical, Source: findings.SourceDeterministic,
		Title:          prompt.Safe("patrold cannot collect a snapshot", maxTitleRunes),
		Description:    prompt.Safe("The last run could not collect a snapshot, so nothing in the fleet is being checked: "+err.Error(), maxSummaryRunes),
		Recommendation: prompt.Safe("Check the source configuration (source.*) and the collector; the finding resolves at the next run that collects.", maxSummaryRunes),
		Evidence:       prompt.Safe("error="+strconv.Quote(err.Error()), maxEvidenceRunes),
	}
}
