package signals

import (
	"slices"

	"github.com/patrold/patrold/snapshot"
)

// Filed is what matching needs of a finding that was created, re-reported,
// merged into or assessed present during this run.
type Filed struct {
	ResourceID string
	// Key is the finding's key as findings.NormalizeKey leaves it: it
	// covers only signals of that type (an alias is normalised to it).
	Key      string
	Category string
	// Severity of the finding: it covers only signals of at most this
	// severity.
	Severity string
}

// SeverityRank orders the finding severities info < watch < warning <
// critical (1..4); anything else ranks 0, below every signal.
func SeverityRank(s string) int {
	switch s {
	case "info":
		return 1
	case "watch":
		return 2
	case SeverityWarning:
		return 3
	case SeverityCritical:
		return 4
	}
	return 0
}

// Match splits signals into those matched by a finding filed this run and
// those left unmatched. A finding matches a signal when it has the same
// canonical resource id, the same category, the same key (the signal's
// type) and a severity at least the signal's. So an info or watch finding
// never covers a warning, a finding under a key of its own covers nothing
// (the net files its own finding beside it), and a model that files
// benign findings cannot hide real ones. The same matcher serves
// production and the evaluation suite.
func Match(sigs []Signal, filed []Filed) (matched, unmatched []Signal) {
	type key struct{ id, cat string }
	byPair := make(map[key][]int, len(filed))
	for i := range filed {
		k := key{snapshot.CanonicalID(filed[i].ResourceID), filed[i].Category}
		byPair[k] = append(byPair[k], i)
	}
	for _, s := range sigs {
		covered := slices.ContainsFunc(byPair[key{snapshot.CanonicalID(s.ResourceID), s.Category}], func(i int) bool { return covers(&filed[i], &s) })
		if covered {
			matched = append(matched, s)
		} else {
			unmatched = append(unmatched, s)
		}
	}
	return matched, unmatched
}

// covers reports whether f, filed on s's resource and category, covers s:
// the same key and a severity at least the signal's.
func covers(f *Filed, s *Signal) bool {
	//mutate:match-same-key ./signals,./cmd/patrold ^TestMatch|^TestProvenanceAttacks
	if t, _ := Lookup(f.Key); t != s.Type {
		return false
	}
	r := SeverityRank(f.Severity)
	//mutate:match-severity-at-least-signal ./signals,./cmd/patrold ^TestMatch|^TestPatrolAttacks
	if r == 0 || r < SeverityRank(s.Severity) {
		return false
	}
	return true
}

// judged are the resource kinds detection judges each catalogue key on
// (docs/MODEL_STAGES.md#matching-by-key). A model report under a catalogue
// key on another kind is refused: the net could never check it.
var judged = map[Type][]snapshot.Kind{
	TypeSmartFailure:        {snapshot.KindDisk},
	TypeHighCPU:             {snapshot.KindNode, snapshot.KindVM, snapshot.KindContainer},
	TypeHighMemory:          {snapshot.KindNode, snapshot.KindVM, snapshot.KindContainer},
	TypeHighDisk:            {snapshot.KindStorage, snapshot.KindVM, snapshot.KindContainer},
	TypeBackupFailed:        {snapshot.KindVM, snapshot.KindContainer},
	TypeBackupStale:         {snapshot.KindVM, snapshot.KindContainer},
	TypeGuestUnreachable:    {snapshot.KindVM, snapshot.KindContainer},
	TypeNodeOffline:         {snapshot.KindNode},
	TypeDiskTemperature:     {snapshot.KindDisk},
	TypeDiskWear:            {snapshot.KindDisk},
	TypeZFSPoolDegraded:     {snapshot.KindStorage},
	TypeCapacityForecast:    {snapshot.KindStorage, snapshot.KindVM, snapshot.KindContainer},
	TypeBackupJobFailed:     {snapshot.KindStorage},
	TypeHighSwap:            {snapshot.KindNode},
	TypeHighIOWait:          {snapshot.KindNode},
	TypeQuorumLost:          {snapshot.KindCluster},
	TypeHAError:             {snapshot.KindNode, snapshot.KindVM, snapshot.KindContainer},
	TypeLockStuck:           {snapshot.KindVM, snapshot.KindContainer},
	TypeGuestDown:           {snapshot.KindVM, snapshot.KindContainer},
	TypeBackupUnscheduled:   {snapshot.KindVM, snapshot.KindContainer},
	TypeSnapshotOld:         {snapshot.KindVM, snapshot.KindContainer},
	TypeReplicationFailed:   {snapshot.KindVM, snapshot.KindContainer},
	TypeCertificateExpiring: {snapshot.KindNode},
	TypeUpdatesPending:      {snapshot.KindNode},
	TypeBackupUnverified:    {snapshot.KindVM, snapshot.KindContainer},
	TypeZFSScrubOverdue:     {snapshot.KindStorage},
}

// Judges reports whether detection judges typ on resources of kind.
func Judges(typ Type, kind snapshot.Kind) bool { return slices.Contains(judged[typ], kind) }

// JudgedKinds lists the kinds detection judges typ on (a copy).
func JudgedKinds(typ Type) []snapshot.Kind { return slices.Clone(judged[typ]) }

// ceilings are the highest severity the detectors of these types ever
// give, whatever the settings. A model report under one of them above it
// is refused even where detection could not decide.
var ceilings = map[Type]string{
	TypeCapacityForecast:  SeverityWarning,
	TypeBackupFailed:      SeverityWarning,
	TypeBackupStale:       SeverityWarning,
	TypeGuestUnreachable:  SeverityWarning,
	TypeBackupUnscheduled: SeverityWarning,
}

// Ceiling is the highest severity detection ever gives for typ, or "" when
// it depends on the settings (a critical threshold) or the data.
func Ceiling(typ Type) string { return ceilings[typ] }
