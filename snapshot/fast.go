package snapshot

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// fastParser parses one resource object in place, from the bytes of a value
// the tokenizer has already validated. It keeps a resource only when v1
// would have kept the same resource. It is conservative: anything it does
// not handle itself makes parse return false, and the element goes to
// decodeResource, which gives v1's verdict and words. Such are a key
// spelled with escapes or other case, a duplicate key, a value of the wrong
// type, a number v1 cannot hold, or a failed check. So on its path no
// problem text is built and nothing is decoded twice.
type fastParser struct {
	b      []byte
	i      int
	strict bool
	res    Resource
	text   arena
	intern map[string]string
	// metricBuf gathers one resource's metrics; metricSlab holds them all.
	metricBuf  Metrics
	metricSlab metricSlab
	// The last tags and the last two times read, by the text they were
	// read from: a fleet repeats them, and a repeat shares the value.
	lastTags  reread[[]string]
	lastPar   reread[[]string] // the last parents list read
	lastTimes [2]reread[*time.Time]
	nextTime  int
}

// reread is a value and the JSON text it was decoded from.
type reread[T any] struct {
	raw []byte
	v   T
}

// at reports whether the value at the cursor is the text of x (a
// complete JSON value, so a prefix match is the whole value) and, if it
// is, moves past it.
func (p *fastParser) at(raw []byte) bool {
	if len(raw) == 0 || !bytes.HasPrefix(p.b[p.i:], raw) {
		return false
	}
	p.i += len(raw)
	return true
}

func newFastParser(strict bool) *fastParser {
	return &fastParser{strict: strict, intern: make(map[string]string, 256)}
}

// Resource keys and the bit each sets (a second occurrence leaves the fast
// path: v1 merges or replaces depending on the type).
const (
	fID = 1 << iota
	fKind
	fName
	fParent
	fStatus
	fTags
	fLabels
	fMetrics
	fAddresses
	fReachable
	fBackup
	fSmart
	fNotes
	fLogs
	fZFS
	fParents
	fBackupStore
)

var resourceKeys = map[string]int{
	"id": fID, "kind": fKind, "name": fName, "parent": fParent, "status": fStatus, "tags": fTags,
	"labels": fLabels, "metrics": fMetrics, "addresses": fAddresses, "reachable": fReachable,
	"backup": fBackup, "smart": fSmart, "notes": fNotes, "logs": fLogs, "zfs": fZFS,
	"parents":      fParents,
	"backup_store": fBackupStore,
}

var backupKeys = map[string]int{"last_status": 1, "last_finished_at": 2, "last_success_at": 4, "last_error": 8, "storage": 16}

var smartKeys = map[string]int{
	"health": 1, "reallocated_sectors": 2, "pending_sectors": 4, "offline_uncorrectable": 8,
	"udma_crc_errors": 16, "media_errors": 32, "wearout_percent": 64, "temperature_c": 128,
	"nvme_critical_warning": 256, "grown_defects": 512,
}

var zfsKeys = map[string]int{"state": 1, "read_errors": 2, "write_errors": 4, "checksum_errors": 8}

// parse parses raw (one validated JSON object) into p.res and reports
// whether the resource is kept exactly as v1 would keep it.
func (p *fastParser) parse(raw []byte) bool {
	p.b, p.i = raw, 0
	p.res = Resource{}
	r := &p.res
	var id []byte
	var haveID bool
	var kind []byte
	seen := 0
	if !p.open('{') {
		return false
	}
	for more := p.first('}'); more; more = p.next('}') {
		bit, ok := p.field(resourceKeys, &seen)
		if !ok {
			return false
		}
		switch bit {
		case fID:
			if id, ok = p.rawString(); !ok {
				return false
			}
			haveID = true
		case fKind:
			if kind, ok = p.rawString(); !ok {
				return false // null or not a string: v1 says "required" or names the type
			}
		case fName:
			ok = p.setString(&r.Name, false)
		case fParent:
			ok = p.setString(&r.Parent, true)
		case fStatus:
			ok = p.setString(&r.Status, true)
		case fNotes:
			ok = p.setString(&r.Notes, false)
		case fParents:
			r.Parents, ok = p.sharedStrings(&p.lastPar)
		case fTags:
			r.Tags, ok = p.sharedStrings(&p.lastTags)
		case fAddresses:
			r.Addresses, ok = p.strings(false)
		case fLogs:
			r.Logs, ok = p.strings(false)
		case fLabels:
			r.Labels, ok = p.labels()
		case fMetrics:
			r.Metrics, ok = p.metrics()
		case fReachable:
			r.Reachable, ok = p.boolPtr()
		case fBackup:
			r.Backup, ok = p.backup()
		case fSmart:
			r.Smart, ok = p.smart()
		case fZFS:
			r.ZFS, ok = p.zfs()
		case fBackupStore:
			// Rare (one per backup datastore): the reference decoder
			// reads it.
			return false
		}
		if !ok {
			return false
		}
	}
	if p.ws(); p.i != len(p.b) || !haveID {
		return false
	}
	if r.Kind = knownKind(kind); r.Kind == "" {
		return false
	}
	r.ID = p.canonicalID(id)
	if r.ID == "" || IDProblem(r.ID) != "" || IDProblem(r.Parent) != "" {
		return false // the v1 decoder names the problem
	}
	if len(r.Parents) > 0 && !canonicalParents(r.ID, r.Parents) {
		return false // v1 names the problem, or canonicalises
	}
	if r.Status != "" {
		r.Status = p.lower(r.Status)
	}
	return true
}

// canonicalParents reports whether parents are fit and already canonical.
func canonicalParents(id string, parents []string) bool {
	if _, prob := ParentsProblem(id, parents); prob != "" {
		return false
	}
	for _, p := range parents {
		if !isCanonical(p) {
			return false
		}
	}
	return true
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

// knownKind returns the kind named case-insensitively by b, or "".
func knownKind(b []byte) Kind {
	for _, k := range Kinds {
		if string(b) == string(k) {
			return k
		}
	}
	if len(b) == 0 {
		return ""
	}
	k := Kind(strings.ToLower(string(b)))
	for _, known := range Kinds {
		if k == known {
			return known
		}
	}
	return ""
}

// canonicalID copies the id out of the input, canonical ("" when blank).
func (p *fastParser) canonicalID(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	plain := b[0] > ' ' && b[0] < utf8.RuneSelf && b[len(b)-1] > ' ' && b[len(b)-1] < utf8.RuneSelf
	if plain {
		for _, c := range b {
			if c == '/' {
				break
			}
			if ('A' <= c && c <= 'Z') || c >= utf8.RuneSelf {
				plain = false
				break
			}
		}
	}
	if plain {
		return p.text.str(b)
	}
	return CanonicalID(string(b))
}

// lower lower-cases a short enum value, reusing interned text.
func (p *fastParser) lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; ('A' <= c && c <= 'Z') || c >= utf8.RuneSelf {
			return p.internString(strings.ToLower(s))
		}
	}
	return s
}

// unknown skips the value of a key the type does not have. In strict mode
// the key is a warning v1 words, and a key v1 would match under case
// folding is one of the type's: both leave the fast path.
func (p *fastParser) unknown(key []byte, known map[string]int) bool {
	if p.strict {
		return false
	}
	var buf [32]byte
	lower := buf[:0]
	upper := false
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
			upper = true
		}
		lower = append(lower, c)
	}
	if upper && known[string(lower)] != 0 {
		return false
	}
	return p.skip()
}

// --- scanning (the input is valid JSON; bounds are still checked) ---

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *fastParser) open(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// first consumes the closing byte of an empty container and reports
// whether there is a first element.
func (p *fastParser) first(end byte) bool {
	if p.peek() == end {
		p.i++
		return false
	}
	return true
}

// next consumes the separator after an element and reports whether
// another follows; it consumes end otherwise.
func (p *fastParser) next(end byte) bool {
	switch p.peek() {
	case ',':
		p.i++
		return true
	case end:
		p.i++
	}
	return false
}

// key reads an object key and its colon. Keys with escapes or non-ASCII
// bytes are left to v1 (it unquotes and folds them).
func (p *fastParser) key() ([]byte, bool) {
	s, simple, ascii, ok := p.scanString()
	if !ok || !simple || !ascii || p.peek() != ':' {
		return nil, false
	}
	p.i++
	return s, true
}

// scanString reads a string at the cursor and returns its contents. simple:
// no escapes; ascii: no byte above 0x7f.
func (p *fastParser) scanString() (s []byte, simple, ascii, ok bool) {
	if p.peek() != '"' {
		return nil, false, false, false
	}
	start := p.i + 1
	simple, ascii = true, true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], simple, ascii, true
		case c == '\\':
			simple = false
			j++
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false, false, false
}

// rawString reads a string value as bytes of the input (valid until the
// next element). Escaped or non-UTF-8 text is unquoted by v1.
func (p *fastParser) rawString() ([]byte, bool) {
	p.ws()
	start := p.i
	s, simple, ascii, ok := p.scanString()
	if !ok {
		return nil, false
	}
	if simple && (ascii || utf8.Valid(s)) {
		return s, true
	}
	var v string
	if json.Unmarshal(p.b[start:p.i], &v) != nil {
		return nil, false
	}
	return []byte(v), true
}

// stringOrNull reads a string (copied out) or null ("", v1 leaves a
// string as it was).
func (p *fastParser) stringOrNull(intern bool) (string, bool) {
	if p.peek() == 'n' {
		return "", p.skip()
	}
	b, ok := p.rawString()
	if !ok {
		return "", false
	}
	if intern {
		return p.internBytes(b), true
	}
	return p.text.str(b), true
}

func (p *fastParser) setString(dst *string, intern bool) bool {
	s, ok := p.stringOrNull(intern)
	*dst = s
	return ok
}

// strings reads an array of strings: null is nil, [] is empty, not nil.
func (p *fastParser) strings(intern bool) ([]string, bool) {
	switch p.peek() {
	case 'n':
		return nil, p.skip()
	case '[':
		p.i++
	default:
		return nil, false
	}
	out := []string{}
	for more := p.first(']'); more; more = p.next(']') {
		if p.peek() != '"' {
			return nil, false
		}
		s, ok := p.stringOrNull(intern)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// sharedStrings reads a string array that resources mostly repeat (tags,
// parents): the same text as the last one read through last gives the
// same slice. The slice is full (len == cap), so an append to one
// resource's copy copies it.
func (p *fastParser) sharedStrings(last *reread[[]string]) ([]string, bool) {
	if p.ws(); p.at(last.raw) {
		return last.v, true
	}
	start := p.i
	v, ok := p.strings(true)
	if !ok || len(v) == 0 {
		return v, ok
	}
	v = v[:len(v):len(v)]
	if p.i-start <= maxRereadTags {
		last.raw, last.v = append(last.raw[:0], p.b[start:p.i]...), v
	}
	return v, true
}

// maxRereadTags bounds the text of tags kept for comparison.
const maxRereadTags = 256

func (p *fastParser) labels() (map[string]string, bool) {
	if null, ok := p.nullOrObject(); null || !ok {
		return nil, ok
	}
	out := make(map[string]string, 4)
	for more := p.first('}'); more; more = p.next('}') {
		k, ok := p.key()
		if !ok || p.peek() != '"' {
			return nil, false
		}
		v, ok := p.stringOrNull(true)
		if !ok {
			return nil, false
		}
		out[p.internBytes(k)] = v
	}
	return out, true
}

// metrics reads the metrics object and applies the metric checks: a value
// that fails them leaves the fast path (v1 names the first in key order).
// The values are gathered in a scratch buffer, in name order (a repeated
// name: the last wins), and copied into the parser's shared array, so a
// resource's metrics cost no allocation of their own.
func (p *fastParser) metrics() (Metrics, bool) {
	if null, ok := p.nullOrObject(); null || !ok {
		return nil, ok
	}
	buf := p.metricBuf[:0]
	for more := p.first('}'); more; more = p.next('}') {
		k, ok := p.key()
		if !ok {
			return nil, false
		}
		num, ok := p.number()
		if !ok {
			return nil, false
		}
		v, err := strconv.ParseFloat(string(num), 64)
		if err != nil || v < 0 {
			return nil, false
		}
		if v > 100 && isPercentBytes(k) {
			return nil, false
		}
		if n := len(buf); n == 0 || buf[n-1].Name < string(k) {
			buf = append(buf, Metric{Name: p.internBytes(k), Value: v})
		} else {
			buf.Set(p.internBytes(k), v)
		}
	}
	p.metricBuf = buf
	if len(buf) == 0 {
		return nil, true
	}
	return p.metricSlab.take(buf), true
}

// metricSlab hands out the metrics of many resources from one array: each
// resource's slice is full (len == cap), so a later Set that adds a name
// copies instead of writing into the neighbour's values.
type metricSlab struct{ free []Metric }

const metricSlabLen = 1024

func (s *metricSlab) take(m Metrics) Metrics {
	if len(m) > metricSlabLen/8 {
		return slices.Clone(m)
	}
	if len(s.free) < len(m) {
		s.free = make([]Metric, metricSlabLen)
	}
	out := s.free[:len(m):len(m)]
	copy(out, m)
	s.free = s.free[len(m):]
	return out
}

func isPercentBytes(k []byte) bool {
	s := string(k)
	return strings.HasSuffix(s, "_percent") || strings.HasSuffix(s, "_percent"+avgSuffix)
}

func (p *fastParser) boolPtr() (*bool, bool) {
	switch p.peek() {
	case 'n':
		return nil, p.skip()
	case 't', 'f':
		v := p.b[p.i] == 't'
		return &v, p.skip()
	}
	return nil, false
}

func (p *fastParser) backup() (*Backup, bool) {
	if null, ok := p.nullOrObject(); null || !ok {
		return nil, ok
	}
	b := &Backup{}
	seen := 0
	for more := p.first('}'); more; more = p.next('}') {
		bit, ok := p.field(backupKeys, &seen)
		if !ok {
			return nil, false
		}
		switch bit {
		case 1:
			ok = p.setString(&b.LastStatus, true)
		case 8:
			ok = p.setString(&b.LastError, false)
		case 16:
			ok = p.setString(&b.Storage, true)
		case 2:
			b.LastFinishedAt, ok = p.timePtr()
		case 4:
			b.LastSuccessAt, ok = p.timePtr()
		}
		if !ok {
			return nil, false
		}
	}
	return b, true
}

// field reads the next key of an object whose known keys are keys and
// returns its bit. Bit 0 is an unknown key, already skipped as v1 would.
// seen collects the bits read so far. A repeated key is not ok: the fast
// path leaves such a resource to v1.
func (p *fastParser) field(keys map[string]int, seen *int) (bit int, ok bool) {
	k, ok := p.key()
	if !ok {
		return 0, false
	}
	if bit = keys[string(k)]; bit == 0 {
		return 0, p.unknown(k, keys)
	}
	if *seen&bit != 0 {
		return 0, false
	}
	*seen |= bit
	return bit, true
}

// nullOrObject reads a null (null true) or the opening brace of an
// object; anything else is not ok.
func (p *fastParser) nullOrObject() (null, ok bool) {
	switch p.peek() {
	case 'n':
		return true, p.skip()
	case '{':
		p.i++
		return false, true
	}
	return false, false
}

// timePtr reads a time the way v1 does (time.Time's UnmarshalJSON on the
// quoted text); null is nil. The text of one of the last two times read
// gives the same pointer (backups finish at the same times across a
// fleet), which is why decoded times are never written through.
func (p *fastParser) timePtr() (*time.Time, bool) {
	if p.peek() == 'n' {
		return nil, p.skip()
	}
	for j := range p.lastTimes {
		if p.at(p.lastTimes[j].raw) {
			return p.lastTimes[j].v, true
		}
	}
	start := p.i
	if _, _, _, ok := p.scanString(); !ok {
		return nil, false
	}
	t := new(time.Time)
	if t.UnmarshalJSON(p.b[start:p.i]) != nil {
		return nil, false
	}
	last := &p.lastTimes[p.nextTime]
	p.nextTime = (p.nextTime + 1) % len(p.lastTimes)
	last.raw, last.v = append(last.raw[:0], p.b[start:p.i]...), t
	return t, true
}

func (p *fastParser) smart() (*Smart, bool) {
	if null, ok := p.nullOrObject(); null || !ok {
		return nil, ok
	}
	s := &Smart{}
	seen := 0
	for more := p.first('}'); more; more = p.next('}') {
		bit, ok := p.field(smartKeys, &seen)
		if !ok {
			return nil, false
		}
		switch bit {
		case 1:
			ok = p.setString(&s.Health, true)
		case 2:
			ok = p.count(&s.ReallocatedSectors)
		case 4:
			ok = p.count(&s.PendingSectors)
		case 8:
			ok = p.count(&s.OfflineUncorrectable)
		case 16:
			ok = p.count(&s.UDMACRCErrors)
		case 32:
			ok = p.count(&s.MediaErrors)
		case 64:
			s.WearoutPercent, ok = p.intPtr()
			ok = ok && (s.WearoutPercent == nil || (*s.WearoutPercent >= 0 && *s.WearoutPercent <= 100))
		case 128:
			s.TemperatureC, ok = p.intPtr()
		case 256:
			ok = p.count(&s.NVMeCriticalWarning)
		case 512:
			ok = p.count(&s.GrownDefects)
		}
		if !ok {
			return nil, false
		}
	}
	return s, true
}

func (p *fastParser) zfs() (*ZFS, bool) {
	if null, ok := p.nullOrObject(); null || !ok {
		return nil, ok
	}
	z := &ZFS{}
	seen := 0
	for more := p.first('}'); more; more = p.next('}') {
		bit, ok := p.field(zfsKeys, &seen)
		if !ok {
			return nil, false
		}
		switch bit {
		case 1:
			ok = p.setString(&z.State, true)
		case 2:
			ok = p.count(&z.ReadErrors)
		case 4:
			ok = p.count(&z.WriteErrors)
		case 8:
			ok = p.count(&z.ChecksumErrors)
		}
		if !ok {
			return nil, false
		}
	}
	return z, true
}

// count reads a SMART counter: an integer, not negative; null leaves it 0.
func (p *fastParser) count(dst *int64) bool {
	if p.peek() == 'n' {
		return p.skip()
	}
	v, ok := p.integer()
	*dst = v
	return ok && v >= 0
}

func (p *fastParser) intPtr() (*int64, bool) {
	if p.peek() == 'n' {
		return nil, p.skip()
	}
	v, ok := p.integer()
	if !ok {
		return nil, false
	}
	return &v, true
}

// integer reads a number the way v1 reads one into an int64.
func (p *fastParser) integer() (int64, bool) {
	num, ok := p.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	return v, err == nil
}

// number reads a JSON number's bytes.
func (p *fastParser) number() ([]byte, bool) {
	c := p.peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			p.i++
			continue
		}
		break
	}
	return p.b[start:p.i], true
}

// skip skips one value.
func (p *fastParser) skip() bool {
	switch c := p.peek(); c {
	case '"':
		_, _, _, ok := p.scanString()
		return ok
	case 't', 'n':
		p.i += 4
	case 'f':
		p.i += 5
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				if _, _, _, ok := p.scanString(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return true
				}
			}
			p.i++
		}
		return false
	default:
		_, ok := p.number()
		return ok
	}
	return p.i <= len(p.b)
}

// --- text ---

// internBytes returns the text of b, shared with earlier equal short texts
// (metric names, tags, parents and statuses repeat across a fleet).
func (p *fastParser) internBytes(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := p.text.str(b)
	if len(b) <= maxInterned && len(p.intern) < maxInternEntries {
		p.intern[s] = s
	}
	return s
}

func (p *fastParser) internString(s string) string {
	if v, ok := p.intern[s]; ok {
		return v
	}
	if len(s) <= maxInterned && len(p.intern) < maxInternEntries {
		p.intern[s] = s
	}
	return s
}

const (
	maxInterned      = 64
	maxInternEntries = 1 << 14
	arenaChunk       = 16 << 10
)

// arena copies text out of the input into shared chunks: one allocation
// per chunk instead of one per string. A chunk's bytes are never written
// again once a string refers to them.
type arena struct{ b strings.Builder }

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
