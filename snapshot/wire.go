package snapshot

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// This file reads one resource: UnmarshalDecode into resourceWire, then
// check. A new Resource field needs nothing here (docs/SOURCES.md).

// resourceWire is a resource as the document spells it: the Resource
// itself, its metrics read by metricsWire (which keeps a null value, to
// refuse it).
type resourceWire struct {
	Resource
	Metrics metricsWire `json:"metrics"`
}

// resourceOpts give the document encoding/json v1's meaning: names match
// case-insensitively, a repeated name's later value wins (merged as v1
// merges), invalid UTF-8 becomes U+FFFD. Errors are v2's: the first one
// stops the resource, with its JSON path.
var resourceOpts = json.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// strictOpts find the first unknown name of a resource (strict mode).
var strictOpts = json.JoinOptions(resourceOpts, json.RejectUnknownMembers(true))

// resourceDecoder decodes the resources of one document.
type resourceDecoder struct {
	strict bool
	opts   json.Options
	w      resourceWire
	// The last times read, by their text: a fleet's backups finish at
	// the same few times, and a repeat shares the value.
	times    [2]reread[*time.Time]
	nextTime int
	arena    arena
	unq      []byte
	// The last lists of strings read, by their text (tags, parents), and
	// what reads one.
	lists    [2]reread[[]string]
	nextList int
	listIn   bytes.Reader
	listDec  jsontext.Decoder
	// recent are short texts read, by hash: a repeat (a status, a
	// parent) shares one copy.
	recent [512]string
	seed   maphash.Seed
	// The metrics of many resources share one array (metricSlab), their
	// names one copy each (names).
	names map[string]string
	slab  []Metric
	buf   Metrics
}

// reread is a value and the JSON text it was read from.
type reread[T any] struct {
	raw []byte
	v   T
}

func newResourceDecoder(strict bool) *resourceDecoder {
	rd := &resourceDecoder{strict: strict, names: make(map[string]string, 64), seed: maphash.MakeSeed()}
	rd.opts = json.JoinOptions(resourceOpts, json.WithUnmarshalers(json.JoinUnmarshalers(
		json.UnmarshalFromFunc(rd.time), json.UnmarshalFromFunc(rd.str), json.UnmarshalFromFunc(rd.strings))))
	return rd
}

// str reads a string (text). Anything but a string is read as v1 reads
// it.
func (rd *resourceDecoder) str(d *jsontext.Decoder, dst *string) error {
	if d.PeekKind() != '"' {
		return errors.ErrUnsupported
	}
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	*dst = rd.text(raw)
	return nil
}

// text returns the text of a JSON string, copied into one shared chunk
// (arena); a short text that repeats (a status, a parent) is copied once.
func (rd *resourceDecoder) text(raw jsontext.Value) string {
	b := raw[1 : len(raw)-1]
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			// Escapes, or text that may not be UTF-8: v1 replaces what
			// is invalid with U+FFFD.
			b, _ = jsontext.AppendUnquote(rd.unq[:0], raw)
			rd.unq = b
			break
		}
	}
	if len(b) > maxInterned {
		return rd.arena.str(b)
	}
	slot := &rd.recent[maphash.Bytes(rd.seed, b)%uint64(len(rd.recent))]
	if *slot != string(b) {
		*slot = rd.arena.str(b)
	}
	return *slot
}

// strings reads a list of strings. The text of the last list read gives
// the same slice (full: an append copies it), which is why decoded lists
// are never written through. Anything but a list is read as v1 reads it.
func (rd *resourceDecoder) strings(d *jsontext.Decoder, dst *[]string) error {
	if *dst != nil {
		// A repeated name: v1 merges the lists, so on a copy.
		*dst = slices.Clone(*dst)
		return errors.ErrUnsupported
	}
	if d.PeekKind() != '[' {
		return errors.ErrUnsupported
	}
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	for _, last := range rd.lists {
		if last.v != nil && bytes.Equal(raw, last.raw) {
			*dst = last.v
			return nil
		}
	}
	rd.listIn.Reset(raw)
	ld := &rd.listDec
	ld.Reset(&rd.listIn, tokenOpts...)
	if _, err := ld.ReadToken(); err != nil {
		return err
	}
	out := []string{}
	for i := 0; ld.PeekKind() != ']'; i++ {
		switch k := ld.PeekKind(); k {
		case '"':
			v, err := ld.ReadValue()
			if err != nil {
				return err
			}
			out = append(out, rd.text(v))
		case 'n':
			if _, err := ld.ReadToken(); err != nil {
				return err
			}
			out = append(out, "")
		default:
			return &json.SemanticError{JSONPointer: d.StackPointer().AppendToken(strconv.Itoa(i)), GoType: reflect.TypeFor[string](), JSONKind: k}
		}
	}
	out = slices.Clip(out)
	if len(raw) <= maxReread {
		last := &rd.lists[rd.nextList]
		rd.nextList = (rd.nextList + 1) % len(rd.lists)
		last.raw, last.v = append(last.raw[:0], raw...), out
	}
	*dst = out
	return nil
}

// maxReread bounds the text of a list kept for comparison.
const maxReread = 256

// errNotTime marks a time that is not one.
var errNotTime = errors.New("not an RFC 3339 time")

// time reads a time as encoding/json v1 does (time.Time's UnmarshalJSON
// on the text), null as nil. The text of one of the last two times read
// gives the same pointer, which is why decoded times are never written
// through.
func (rd *resourceDecoder) time(d *jsontext.Decoder, dst **time.Time) error {
	v, err := d.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() == 'n' {
		*dst = nil
		return nil
	}
	for _, last := range rd.times {
		if last.v != nil && bytes.Equal(last.raw, v) {
			*dst = last.v
			return nil
		}
	}
	t := new(time.Time)
	if err := t.UnmarshalJSON(v); err != nil {
		return errNotTime
	}
	last := &rd.times[rd.nextTime]
	rd.nextTime = (rd.nextTime + 1) % len(rd.times)
	last.raw, last.v = append(last.raw[:0], v...), t
	*dst = t
	return nil
}

// decode reads resource element i (the next value of d) and returns it
// when it is kept, with its problems. The error is the document's: a
// syntax or read error.
func (rd *resourceDecoder) decode(d *jsontext.Decoder, i int) (*Resource, []Problem, error) {
	var raw jsontext.Value
	if rd.strict {
		// Read whole, so the unknown names can be looked for after.
		var err error
		if raw, err = d.ReadValue(); err != nil {
			return nil, nil, err
		}
		d = jsontext.NewDecoder(bytes.NewReader(raw), tokenOpts...)
	}
	rd.w = resourceWire{Metrics: metricsWire{rd: rd}}
	w := &rd.w
	depth := d.StackDepth()
	if err := json.UnmarshalDecode(d, w, rd.opts); err != nil {
		if !errors.As(err, new(*json.SemanticError)) {
			return nil, nil, err // syntax or reading: the document's
		}
		// The first error stops the resource: read the rest of it, for
		// its id.
		if err := rd.skipRest(d, depth); err != nil {
			return nil, nil, err
		}
		field, problem := decodeProblem(err, depth)
		return nil, []Problem{{ID: ProblemID(CanonicalID(w.ID)), Index: i, Field: quoted(field), Problem: problem}}, nil
	}
	r := &w.Resource
	r.Metrics = w.Metrics.m
	var warnings []Problem
	if rd.strict {
		warnings = unknownName(raw, i, r.ID)
	}
	if field, problem := check(r); problem != "" {
		return nil, append(warnings, Problem{ID: ProblemID(CanonicalID(r.ID)), Index: i, Field: field, Problem: problem}), nil
	}
	if rd.strict {
		warnings = append(warnings, enumWarnings(r, i)...)
	}
	return r, warnings, nil
}

// skipRest reads what UnmarshalDecode left of a resource begun at depth,
// keeping the last "id" it meets at the resource's top level as
// encoding/json v1 would (a string, or "" for any other value).
func (rd *resourceDecoder) skipRest(d *jsontext.Decoder, depth int) error {
	for d.StackDepth() > depth {
		top := d.StackDepth()
		kind, n := d.StackIndex(top)
		if kind == '{' && n%2 == 0 && d.PeekKind() != '}' && top == depth+1 {
			name, err := d.ReadToken()
			if err != nil {
				return err
			}
			if matchKey(name.String(), idKey) == 0 {
				if err := d.SkipValue(); err != nil {
					return err
				}
				continue
			}
			v, err := d.ReadValue()
			if err != nil {
				return err
			}
			rd.w.ID = ""
			if v.Kind() == '"' {
				s, _ := jsontext.AppendUnquote(nil, v)
				rd.w.ID = string(s)
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
	}
	return nil
}

var idKey = []string{"", "id"}

// fieldError is a problem found while decoding, at a field named whole.
type fieldError struct{ field, problem string }

func (e *fieldError) Error() string { return e.field + ": " + e.problem }

// decodeProblem names the field and the problem of a decoding error, in a
// resource at depth in the document.
func decodeProblem(err error, depth int) (field, problem string) {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.field, fe.problem
	}
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return "(resource)", err.Error()
	}
	field = fieldPath(reflect.TypeFor[resourceWire](), se.JSONPointer, depth)
	var perr *time.ParseError
	switch {
	case errors.Is(se.Err, json.ErrUnknownName):
		return field, "unknown field (ignored)"
	case errors.Is(se.Err, errNotTime) || errors.As(se.Err, &perr):
		return field, "not an RFC 3339 time"
	}
	return field, "must be " + jsonType(se.GoType) + ", got " + jsonValue(se)
}

// jsonType is what a Go type is read from.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "an object"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// jsonValue describes the value that could not be read, as encoding/json
// v1 does: its kind, and a number that does not fit, whole.
func jsonValue(se *json.SemanticError) string {
	if errors.Is(se.Err, strconv.ErrRange) || errors.Is(se.Err, strconv.ErrSyntax) {
		return "number " + string(se.JSONValue)
	}
	return kindName(se.JSONKind)
}

// fieldPath names the field a JSON pointer points at in a resource at
// depth, as problems name fields: "backup.last_success_at", "parents[2]",
// "labels.site". Names are the type's own, however the document cased
// them.
func fieldPath(t reflect.Type, p jsontext.Pointer, depth int) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if depth > 0 {
			depth--
			continue
		}
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			b.WriteString("[" + tok + "]")
			t = t.Elem()
			continue
		case t != nil && t.Kind() == reflect.Struct:
			t, tok = structField(t, tok)
		case t != nil && t.Kind() == reflect.Map:
			t = t.Elem()
		default: // below what the type says
			t = nil
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return "(resource)"
	}
	return b.String()
}

// quoted is a field path with what a document named in it escaped, so a
// problem carries no live text.
func quoted(field string) string {
	q := strconv.Quote(field)
	return q[1 : len(q)-1]
}

// structField returns the type and JSON name of the field of struct t a
// document names name (matched as resourceOpts match it); nil and name
// itself when none is.
func structField(t reflect.Type, name string) (reflect.Type, string) {
	var found reflect.Type
	var tag string
	depth := -1
	var walk func(t reflect.Type, d int)
	walk = func(t reflect.Type, d int) {
		for f := range t.Fields() {
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && n == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, d+1)
				continue
			}
			if n == "" {
				n = f.Name
			}
			if (n == name || foldName(n) == foldName(name)) && (depth < 0 || d < depth) {
				found, tag, depth = f.Type, n, d
			}
		}
	}
	walk(t, 0)
	if found == nil {
		return nil, name
	}
	return found, tag
}

// unknownName reports the first name of a resource no field takes
// (strict mode), with its path.
func unknownName(raw []byte, i int, id string) []Problem {
	err := json.Unmarshal(raw, &resourceWire{}, strictOpts)
	var se *json.SemanticError
	if !errors.As(err, &se) || !errors.Is(se.Err, json.ErrUnknownName) {
		return nil
	}
	return []Problem{{ID: ProblemID(CanonicalID(id)), Index: i, Field: quoted(fieldPath(reflect.TypeFor[resourceWire](), se.JSONPointer, 0)), Problem: "unknown field (ignored)", Warning: true}}
}

// metricsWire reads the metrics object: values in name order, a null
// value kept as NaN (JSON has no NaN), for check to refuse.
type metricsWire struct {
	m  Metrics
	rd *resourceDecoder
}

// UnmarshalJSONFrom reads metrics as encoding/json v1 reads a
// map[string]*float64: null clears them, an object adds its values (a
// repeated name: the last wins). A value that is not a number is an error
// naming it; the rest of the object is read first.
func (mw *metricsWire) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	k := d.PeekKind()
	switch k {
	case 'n':
		_, err := d.ReadToken()
		mw.m = nil
		return err
	case '{':
	default:
		if err := d.SkipValue(); err != nil {
			return err
		}
		return &fieldError{"metrics", "must be an object, got " + kindName(k)}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	rd := mw.rd
	if rd == nil {
		rd = newResourceDecoder(false)
	}
	buf := append(rd.buf[:0], mw.m...)
	var bad error
	for d.PeekKind() != '}' {
		name, err := rd.name(d)
		if err != nil {
			return err
		}
		v := math.NaN()
		switch k := d.PeekKind(); k {
		case 'n':
			_, err = d.ReadToken()
		case '0':
			var tok jsontext.Token
			if tok, err = d.ReadToken(); err != nil {
				break
			}
			if v, err = tok.Float(); err != nil {
				bad, err = cmp.Or(bad, error(&fieldError{"metrics." + name, "must be a number, got number " + tok.String()})), nil
			}
		default:
			if k == 0 {
				_, err = d.ReadToken()
				break
			}
			err = d.SkipValue()
			bad = cmp.Or(bad, error(&fieldError{"metrics." + name, "must be a number, got " + kindName(k)}))
		}
		if err != nil {
			return err
		}
		if n := len(buf); n == 0 || buf[n-1].Name < name {
			buf = append(buf, Metric{Name: name, Value: v})
		} else {
			buf.Set(name, v)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	rd.buf = buf
	if bad != nil {
		return bad
	}
	mw.m = rd.take(buf)
	return nil
}

// name reads an object name, one copy of each name kept.
func (rd *resourceDecoder) name(d *jsontext.Decoder) (string, error) {
	v, err := d.ReadValue()
	if err != nil {
		return "", err
	}
	if s, ok := rd.names[string(v)]; ok {
		return s, nil
	}
	b, _ := jsontext.AppendUnquote(nil, v) // invalid UTF-8 became U+FFFD, as in v1
	s := string(b)
	if len(rd.names) < maxNames {
		rd.names[string(v)] = s
	}
	return s, nil
}

// maxNames bounds the metric names kept for reuse; maxInterned is the
// longest text recent keeps.
const (
	maxNames    = 1 << 12
	maxInterned = 64
)

// arena copies text into shared chunks: one allocation a chunk instead
// of one a string. A chunk's bytes are never written again once a string
// refers to them.
type arena struct{ b strings.Builder }

const arenaChunk = 16 << 10

func (a *arena) str(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	if len(p) > arenaChunk/4 {
		return string(p)
	}
	if a.b.Cap()-a.b.Len() < len(p) {
		a.b = strings.Builder{}
		a.b.Grow(arenaChunk)
	}
	start := a.b.Len()
	a.b.Write(p)
	return a.b.String()[start:]
}

// take copies metrics into the shared array. Each resource's slice is
// full (len == cap), so a later Set that adds a name copies instead of
// writing into a neighbour's values.
func (rd *resourceDecoder) take(m Metrics) Metrics {
	if len(m) == 0 {
		return nil // as v1 leaves an empty object's
	}
	if len(m) > metricSlabLen/8 {
		return slices.Clone(m)
	}
	if len(rd.slab) < len(m) {
		rd.slab = make([]Metric, metricSlabLen)
	}
	out := rd.slab[:len(m):len(m)]
	copy(out, m)
	rd.slab = rd.slab[len(m):]
	return out
}

const metricSlabLen = 1024

// check applies the rules of a resource (docs/SOURCES.md) to one decoded
// as the document spells it, and makes it canonical. It returns the field
// and problem of the first rule broken.
func check(r *Resource) (field, problem string) {
	if strings.TrimSpace(r.ID) == "" {
		return "id", "required"
	}
	id := CanonicalID(r.ID)
	if prob := IDProblem(id); prob != "" {
		return "id", prob
	}
	// A resource id is kind/rest, no part an option: a command given it
	// never takes it for one (docs/SOURCES.md).
	//mutate:snapshot-id-grammar ./snapshot ^TestDecodeRefusesIDsOutsideTheGrammar$
	if prob := idGrammarProblem(id); prob != "" {
		return "id", prob
	}
	if prob := IDProblem(r.Parent); prob != "" {
		return "parent", prob
	}
	if field, prob := ParentsProblem(id, r.Parents); prob != "" {
		return field, prob
	}
	if r.Kind == "" {
		return "kind", "required"
	}
	kind := Kind(strings.ToLower(string(r.Kind)))
	if !kind.Valid() {
		return "kind", fmt.Sprintf("unknown kind %q (want node, vm, container, storage, disk or cluster)", r.Kind)
	}
	for _, m := range r.Metrics {
		if prob := metricProblem(m); prob != "" {
			return "metrics." + m.Name, prob
		}
	}
	if s := r.Smart; s != nil {
		for _, c := range []struct {
			field string
			v     int64
		}{
			{"reallocated_sectors", s.ReallocatedSectors}, {"pending_sectors", s.PendingSectors},
			{"offline_uncorrectable", s.OfflineUncorrectable}, {"udma_crc_errors", s.UDMACRCErrors},
			{"media_errors", s.MediaErrors}, {"nvme_critical_warning", s.NVMeCriticalWarning}, {"grown_defects", s.GrownDefects},
		} {
			if c.v < 0 {
				return "smart." + c.field, "negative"
			}
		}
		if s.WearoutPercent != nil && (*s.WearoutPercent < 0 || *s.WearoutPercent > 100) {
			return "smart.wearout_percent", "outside 0..100"
		}
	}
	if z := r.ZFS; z != nil {
		for _, c := range []struct {
			field string
			v     int64
		}{{"read_errors", z.ReadErrors}, {"write_errors", z.WriteErrors}, {"checksum_errors", z.ChecksumErrors}} {
			if c.v < 0 {
				return "zfs." + c.field, "negative"
			}
		}
		if sc := z.Scrub; sc != nil {
			switch {
			case sc.State != ScrubFinished && sc.State != ScrubRunning && sc.State != ScrubNever:
				return "zfs.scrub.state", fmt.Sprintf("%q is not one of finished, running, never", sc.State)
			case sc.Errors < 0:
				return "zfs.scrub.errors", "negative"
			}
		}
	}
	if bs := r.BackupStore; bs != nil {
		for j, job := range bs.Jobs {
			key := "backup_store.jobs[" + strconv.Itoa(j) + "]"
			switch {
			case strings.TrimSpace(job.ID) == "":
				return key + ".id", "required"
			case !slices.Contains(JobTypes, job.Type):
				return key + ".type", fmt.Sprintf("%q is not one of %s", job.Type, strings.Join(JobTypes, ", "))
			}
		}
		if len(bs.VerifyFailed) > MaxVerifyFailed {
			return "backup_store.verify_failed", fmt.Sprintf("more than %d snapshots", MaxVerifyFailed)
		}
	}
	if b := r.Backup; b != nil && b.Verify != nil && b.Verify.State != VerifyOK && b.Verify.State != VerifyFailed && b.Verify.State != VerifyNone {
		return "backup.verify.state", fmt.Sprintf("%q is not one of ok, failed, none", b.Verify.State)
	}
	if u := r.Updates; u != nil {
		switch {
		case u.Packages < 0:
			return "updates.packages", "negative"
		case u.Security < 0 || u.Security > u.Packages:
			return "updates.security", "outside 0..packages"
		case len(u.Names) > MaxUpdateNames:
			return "updates.names", fmt.Sprintf("more than %d names", MaxUpdateNames)
		}
	}
	if rp := r.Replication; rp != nil {
		if len(rp.Jobs) > MaxReplicationJobs {
			return "replication.jobs", fmt.Sprintf("more than %d jobs", MaxReplicationJobs)
		}
		for j, job := range rp.Jobs {
			key := "replication.jobs[" + strconv.Itoa(j) + "]"
			switch {
			case strings.TrimSpace(job.ID) == "":
				return key + ".id", "required"
			case job.FailCount < 0:
				return key + ".fail_count", "negative"
			case job.IntervalSeconds < 0:
				return key + ".interval_seconds", "negative"
			}
		}
	}
	r.ID, r.Kind, r.Status, r.Parents = id, kind, lowerASCII(r.Status), canonicalIDs(r.Parents)
	return "", ""
}

func metricProblem(m Metric) string {
	switch {
	case math.IsNaN(m.Value):
		return "not a number"
	case math.IsInf(m.Value, 0):
		return "not a finite number"
	case isPercent(m.Name) && (m.Value < 0 || m.Value > 100):
		return "outside 0..100"
	case m.Value < 0:
		return "negative"
	}
	return ""
}

// idGrammarProblem says what makes a canonical id other than kind/rest: a
// kind, a slash, then the rest, both not empty, and no part (between
// slashes) starting with "-" (CONTRACTS, the snapshot document).
func idGrammarProblem(id string) string {
	kind, rest, ok := strings.Cut(id, "/")
	switch {
	case !ok:
		return `not kind/name: no "/"`
	case kind == "":
		return `not kind/name: no kind before "/"`
	case rest == "":
		return `not kind/name: no name after "/"`
	}
	for part := range strings.SplitSeq(id, "/") {
		if strings.HasPrefix(part, "-") {
			return fmt.Sprintf("part %q starts with \"-\"", part)
		}
	}
	return ""
}

// lowerASCII is strings.ToLower, without a copy for a string already in
// lower case.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; ('A' <= c && c <= 'Z') || c >= utf8.RuneSelf {
			return strings.ToLower(s)
		}
	}
	return s
}

// canonicalIDs canonicalises ids in place; nil and empty stay as they are.
func canonicalIDs(ids []string) []string {
	for i, id := range ids {
		ids[i] = CanonicalID(id)
	}
	return ids
}

// isCanonical reports whether CanonicalID(id) == id, without building it.
func isCanonical(id string) bool {
	if id == "" || id[0] <= ' ' || id[len(id)-1] <= ' ' || id[0] >= utf8.RuneSelf || id[len(id)-1] >= utf8.RuneSelf {
		return CanonicalID(id) == id
	}
	for i := 0; i < len(id) && id[i] != '/'; i++ {
		if 'A' <= id[i] && id[i] <= 'Z' {
			return false
		}
	}
	return true
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
// problem that is not a warning (decoding gives exactly one).
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
