package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file is the encoding/json v1 side of the codec: the slow path for
// problem resources and the reference the streaming decoder is tested
// against (FuzzDecodeMatchesV1).

type document struct {
	Version   *json.RawMessage  `json:"version"`
	TakenAt   *string           `json:"taken_at"`
	Source    string            `json:"source"`
	Resources []json.RawMessage `json:"resources"`
}

type resourceWire struct {
	ID        *string             `json:"id"`
	Kind      string              `json:"kind"`
	Name      string              `json:"name"`
	Parent    string              `json:"parent"`
	Parents   []string            `json:"parents"`
	Status    string              `json:"status"`
	Tags      []string            `json:"tags"`
	Labels    map[string]string   `json:"labels"`
	Metrics   map[string]*float64 `json:"metrics"`
	Addresses []string            `json:"addresses"`
	Reachable *bool               `json:"reachable"`
	Backup    *Backup             `json:"backup"`
	Smart     *Smart              `json:"smart"`
	ZFS       *ZFS                `json:"zfs"`
	// BackupStore is decoded here alone: the streaming decoder hands a
	// resource that has one to this decoder.
	BackupStore *BackupStore `json:"backup_store"`
	Notes       string       `json:"notes"`
	Logs        []string     `json:"logs"`
}

// decodeV1 is the reflection decoder (encoding/json v1) of the whole
// document. It defines the behaviour the streaming decoder keeps, and it is
// used only where that decoder cannot give v1's answer itself: a document
// its tokenizer rejects, so the rejection (or acceptance) and its message
// are exactly v1's.
func decodeV1(data []byte, opts DecodeOptions) (*Snapshot, []Problem, error) {
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, docError(err)
	}
	if doc.Version == nil {
		return nil, nil, &DocumentError{Field: "version", Problem: "required"}
	}
	var version int
	if err := json.Unmarshal(*doc.Version, &version); err != nil || version != Version {
		return nil, nil, &DocumentError{Field: "version", Problem: fmt.Sprintf("must be %d, got %s", Version, string(*doc.Version))}
	}
	if doc.Resources == nil {
		return nil, nil, &DocumentError{Field: "resources", Problem: "required array is missing"}
	}
	snap := &Snapshot{Version: version, Source: doc.Source, Resources: make([]Resource, 0, len(doc.Resources))}
	if doc.TakenAt != nil {
		t, err := time.Parse(time.RFC3339, *doc.TakenAt)
		if err != nil {
			return nil, nil, &DocumentError{Field: "taken_at", Problem: "not an RFC 3339 time: " + strconv.Quote(*doc.TakenAt)}
		}
		snap.TakenAt = t
	}
	var problems []Problem
	if opts.Strict {
		problems = append(problems, unknownFields(data, -1, "", document{})...)
	}
	for i, raw := range doc.Resources {
		r, probs := decodeResource(raw, i, opts.Strict)
		problems = append(problems, probs...)
		if r != nil {
			snap.Resources = append(snap.Resources, *r)
		}
	}
	snap.Resources, problems = dropDuplicates(snap.Resources, problems)
	return snap, problems, nil
}

func docError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &DocumentError{Field: te.Field, Problem: "must be " + jsonType(te.Type.Kind().String()) + ", got " + te.Value}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DocumentError{Problem: fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, err)}
	}
	return &DocumentError{Problem: "not valid JSON: " + err.Error()}
}

func jsonType(goKind string) string {
	switch goKind {
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	default:
		return "a number"
	}
}

// decodeResource decodes one resource element with encoding/json v1. The
// streaming decoder calls it only for an element it does not keep on its
// fast path (an invalid resource, or an unusual spelling such as escaped or
// case-folded keys), so problem texts are v1's and built only for problems.
func decodeResource(raw json.RawMessage, i int, strict bool) (*Resource, []Problem) {
	var w resourceWire
	if err := json.Unmarshal(raw, &w); err != nil {
		p := Problem{ID: ProblemID(peekID(raw)), Index: i, Field: "", Problem: err.Error()}
		var te *json.UnmarshalTypeError
		var perr *time.ParseError
		switch {
		case errors.As(err, &te):
			p.Field, p.Problem = te.Field, "must be "+jsonType(te.Type.Kind().String())+", got "+te.Value
			if te.Field == "metrics" {
				p.Field = badMetric(raw)
			}
		case errors.As(err, &perr):
			p.Field, p.Problem = timeField(raw), "not an RFC 3339 time"
		}
		if p.Field == "" {
			p.Field = "(resource)"
		}
		return nil, []Problem{p}
	}
	var warnings []Problem
	if strict {
		warnings = unknownFields(raw, i, deref(w.ID), resourceWire{})
	}
	fail := func(field, problem string) (*Resource, []Problem) {
		return nil, append(warnings, Problem{ID: ProblemID(deref(w.ID)), Index: i, Field: field, Problem: problem})
	}
	if w.ID == nil || strings.TrimSpace(*w.ID) == "" {
		return fail("id", "required")
	}
	if prob := IDProblem(CanonicalID(*w.ID)); prob != "" {
		return fail("id", prob)
	}
	if prob := IDProblem(w.Parent); prob != "" {
		return fail("parent", prob)
	}
	if field, prob := ParentsProblem(CanonicalID(*w.ID), w.Parents); prob != "" {
		return fail(field, prob)
	}
	if w.Kind == "" {
		return fail("kind", "required")
	}
	kind := Kind(strings.ToLower(w.Kind))
	if !kind.Valid() {
		return fail("kind", fmt.Sprintf("unknown kind %q (want node, vm, container, storage or disk)", w.Kind))
	}
	r := &Resource{
		ID: CanonicalID(*w.ID), Kind: kind, Name: w.Name, Parent: w.Parent, Parents: canonicalIDs(w.Parents),
		Status: strings.ToLower(w.Status),
		Tags:   w.Tags, Labels: w.Labels, Addresses: w.Addresses, Reachable: w.Reachable,
		Backup: w.Backup, Smart: w.Smart, ZFS: w.ZFS, BackupStore: w.BackupStore, Notes: w.Notes, Logs: w.Logs,
	}
	if len(w.Metrics) > 0 {
		r.Metrics = make(Metrics, 0, len(w.Metrics))
		for _, name := range sortedKeys(w.Metrics) {
			v := w.Metrics[name]
			field := "metrics." + name
			switch {
			case v == nil:
				return fail(field, "not a number")
			case math.IsNaN(*v) || math.IsInf(*v, 0):
				return fail(field, "not a finite number")
			case isPercent(name) && (*v < 0 || *v > 100):
				return fail(field, "outside 0..100")
			case *v < 0:
				return fail(field, "negative")
			}
			r.Metrics = append(r.Metrics, Metric{Name: name, Value: *v}) // in name order
		}
	}
	if s := r.Smart; s != nil {
		for field, v := range map[string]int64{
			"reallocated_sectors": s.ReallocatedSectors, "pending_sectors": s.PendingSectors,
			"offline_uncorrectable": s.OfflineUncorrectable, "udma_crc_errors": s.UDMACRCErrors, "media_errors": s.MediaErrors,
			"nvme_critical_warning": s.NVMeCriticalWarning, "grown_defects": s.GrownDefects,
		} {
			if v < 0 {
				return fail("smart."+field, "negative")
			}
		}
		if s.WearoutPercent != nil && (*s.WearoutPercent < 0 || *s.WearoutPercent > 100) {
			return fail("smart.wearout_percent", "outside 0..100")
		}
	}
	if z := r.ZFS; z != nil {
		for field, v := range map[string]int64{"read_errors": z.ReadErrors, "write_errors": z.WriteErrors, "checksum_errors": z.ChecksumErrors} {
			if v < 0 {
				return fail("zfs."+field, "negative")
			}
		}
	}
	if bs := r.BackupStore; bs != nil {
		for j, job := range bs.Jobs {
			key := fmt.Sprintf("backup_store.jobs[%d]", j)
			switch {
			case strings.TrimSpace(job.ID) == "":
				return fail(key+".id", "required")
			case !slices.Contains(JobTypes, job.Type):
				return fail(key+".type", fmt.Sprintf("%q is not one of %s", job.Type, strings.Join(JobTypes, ", ")))
			}
		}
		if len(bs.VerifyFailed) > MaxVerifyFailed {
			return fail("backup_store.verify_failed", fmt.Sprintf("more than %d snapshots", MaxVerifyFailed))
		}
	}
	if strict {
		warnings = append(warnings, enumWarnings(r, i)...)
	}
	return r, warnings
}

// canonicalIDs canonicalises ids in place; nil and empty stay as they are.
func canonicalIDs(ids []string) []string {
	for i, id := range ids {
		ids[i] = CanonicalID(id)
	}
	return ids
}

func isPercent(metric string) bool {
	return strings.HasSuffix(metric, "_percent") || strings.HasSuffix(metric, "_percent"+avgSuffix)
}

func enumWarnings(r *Resource, i int) []Problem {
	var out []Problem
	warn := func(field, problem string) {
		out = append(out, Problem{ID: r.ID, Index: i, Field: field, Problem: problem, Warning: true})
	}
	valid := map[string]bool{"": true, StatusUnknown: true}
	if r.Kind.Guest() {
		valid[StatusRunning], valid[StatusStopped], valid[StatusPaused] = true, true, true
	} else {
		valid[StatusOnline], valid[StatusOffline] = true, true
	}
	if !valid[r.Status] {
		warn("status", fmt.Sprintf("unrecognised status %q for a %s; treated as unknown", r.Status, r.Kind))
	}
	if b := r.Backup; b != nil {
		switch b.LastStatus {
		case "", BackupOK, BackupFailed, BackupRunning, BackupWarning, BackupUnknown:
		default:
			warn("backup.last_status", fmt.Sprintf("unrecognised status %q", b.LastStatus))
		}
	}
	if bs := r.BackupStore; bs != nil {
		for j, job := range bs.Jobs {
			switch job.LastStatus {
			case "", BackupOK, BackupFailed, BackupRunning, BackupWarning, BackupUnknown:
			default:
				warn(fmt.Sprintf("backup_store.jobs[%d].last_status", j), fmt.Sprintf("unrecognised status %q", job.LastStatus))
			}
		}
	}
	for j, a := range r.Addresses {
		if !validHostPort(a) {
			warn(fmt.Sprintf("addresses[%d]", j), fmt.Sprintf("%q is not host:port; it is not probed", a))
		}
	}
	return out
}

func validHostPort(a string) bool {
	i := strings.LastIndexByte(a, ':')
	if i <= 0 || i == len(a)-1 {
		return false
	}
	p, err := strconv.Atoi(a[i+1:])
	return err == nil && p > 0 && p < 65536
}

// unknownFields reports the first unknown field of an object (strict mode).
func unknownFields[T any](raw []byte, i int, id string, _ T) []Problem {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var v T
	err := dec.Decode(&v)
	if err == nil || !strings.HasPrefix(err.Error(), "json: unknown field ") {
		return nil
	}
	name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
	p := Problem{ID: ProblemID(id), Index: i, Field: name, Problem: "unknown field (ignored)", Warning: true}
	if i < 0 {
		p.Index = 0
		p.ID = "(document)"
	}
	return []Problem{p}
}

// dropDuplicates drops every copy of a repeated id, with a problem for each
// naming its place in the resources array. problems are the decode's, in
// array order. The place of each kept resource is recovered from them: the
// decode keeps no index of its own.
func dropDuplicates(rs []Resource, problems []Problem) ([]Resource, []Problem) {
	if !mayRepeat(rs) {
		return rs, problems
	}
	seen := make(map[string]int, len(rs))
	for i := range rs {
		seen[rs[i].ID]++
	}
	if len(seen) == len(rs) {
		return rs, problems
	}
	index := keptIndex(len(rs), problems)
	// A new array, not rs compacted in place: rs's elements may be read by
	// a consumer still (DecodeOptions.Kept), and repeats are rare.
	kept := make([]Resource, 0, len(rs)-1)
	for i := range rs {
		if seen[rs[i].ID] > 1 {
			problems = append(problems, Problem{ID: rs[i].ID, Index: index[i], Field: "id",
				Problem: fmt.Sprintf("duplicate id (appears %d times; every copy dropped)", seen[rs[i].ID])})
			continue
		}
		kept = append(kept, rs[i])
	}
	return kept, problems
}

// mayRepeat reports whether two resources may share an id: whether two
// ids hash alike. The hashes are sorted, not put in a map, so a large
// fleet without repeats (the usual case) costs 8 bytes a resource here;
// equal hashes send the caller to the exact count.
func mayRepeat(rs []Resource) bool {
	if len(rs) < 2 {
		return false
	}
	seed := maphash.MakeSeed()
	hs := make([]uint64, len(rs))
	for i := range rs {
		hs[i] = maphash.String(seed, rs[i].ID)
	}
	slices.Sort(hs)
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			return true
		}
	}
	return false
}

// keptIndex returns the resources-array index of each of n kept
// resources: the elements not dropped, a dropped element being one with a
// problem that is not a warning (decodeResource gives exactly one).
func keptIndex(n int, problems []Problem) []int {
	index := make([]int, 0, n)
	next := 0 // the next array index not yet placed
	for _, p := range problems {
		if p.Warning {
			continue
		}
		for ; next < p.Index; next++ {
			index = append(index, next)
		}
		next = p.Index + 1
	}
	for len(index) < n {
		index = append(index, next)
		next++
	}
	return index
}

func peekID(raw []byte) string {
	var p struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &p) == nil {
		if s, ok := p.ID.(string); ok {
			return CanonicalID(s)
		}
	}
	return ""
}

// badMetric names the first metric (in key order) that is not a number.
func badMetric(raw []byte) string {
	var p struct {
		Metrics map[string]any `json:"metrics"`
	}
	if json.Unmarshal(raw, &p) == nil {
		for _, k := range sortedKeys(p.Metrics) {
			if _, ok := p.Metrics[k].(float64); !ok && p.Metrics[k] != nil {
				return "metrics." + k
			}
		}
	}
	return "metrics"
}

// timeField finds which backup timestamp failed to parse.
func timeField(raw []byte) string {
	var p struct {
		Backup map[string]any `json:"backup"`
	}
	if json.Unmarshal(raw, &p) == nil {
		for _, f := range []string{"last_finished_at", "last_success_at"} {
			if s, ok := p.Backup[f].(string); ok {
				if _, err := time.Parse(time.RFC3339, s); err != nil {
					return "backup." + f
				}
			}
		}
	}
	return "backup"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return CanonicalID(*s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
