package mask

import (
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/patrold/patrold/snapshot"
)

// Source is one field of a snapshot resource the vocabulary draws terms
// from (docs/MODELS.md "Masking names" lists them).
type Source struct {
	// Field is the field as the snapshot document names it.
	Field string
	// Class is the placeholder the terms get: "id", "name", "tag" or
	// "addr". An id adds its canonical form and its non-numeric parts.
	Class string
	// What says which terms of the field are taken.
	What  string
	terms func(r *snapshot.Resource) []string
}

// sources are the fields a resource's terms come from, in this order.
var sources = []Source{
	{"id", classID, "the id", func(r *snapshot.Resource) []string { return []string{r.ID} }},
	{"name", className, "the name", func(r *snapshot.Resource) []string { return []string{r.Name} }},
	//mutate:mask-vocab-parent ./model/mask ^TestVocabularySources$
	{"parent", classID, "the parent's id, in the snapshot or not", func(r *snapshot.Resource) []string { return []string{r.Parent} }},
	//mutate:mask-vocab-parents ./model/mask ^TestVocabularySources$
	{"parents", classID, "every other parent's id", func(r *snapshot.Resource) []string { return r.Parents }},
	{"tags", classTag, "every tag", func(r *snapshot.Resource) []string { return r.Tags }},
	//mutate:mask-vocab-labels ./model/mask ^TestVocabularySources$
	{"labels", classTag, "every value that is not a number or a boolean, and a key's prefix before `/`", labelTerms},
	{"addresses", classAddr, "every address, and its host alone", addressTerms},
	//mutate:mask-vocab-backup-storage ./model/mask ^TestVocabularySources$
	{"backup.storage", classID, "the storage the newest backup is on", func(r *snapshot.Resource) []string {
		if r.Backup == nil {
			return nil
		}
		return []string{r.Backup.Storage}
	}},
	//mutate:mask-vocab-backup-error ./model/mask ^TestVocabularySources$
	{"backup.last_error", classAddr, "the hosts in it", func(r *snapshot.Resource) []string {
		if r.Backup == nil {
			return nil
		}
		return errorHosts(r.Backup.LastError)
	}},
	//mutate:mask-vocab-job-id ./model/mask ^TestVocabularySources$
	{"backup_store.jobs.id", className, "every datastore job's id", func(r *snapshot.Resource) []string {
		return jobField(r, func(j snapshot.Job) []string { return []string{j.ID} })
	}},
	//mutate:mask-vocab-job-error ./model/mask ^TestVocabularySources$
	{"backup_store.jobs.last_error", classAddr, "the hosts in them", func(r *snapshot.Resource) []string {
		return jobField(r, func(j snapshot.Job) []string { return errorHosts(j.LastError) })
	}},
	//mutate:mask-vocab-verify-failed ./model/mask ^TestVocabularySources$
	{"backup_store.verify_failed", classID, "the guest id of every backup snapshot named", verifiedIDs},
	//mutate:mask-vocab-notes-urls ./model/mask ^TestVocabularySources$
	{"notes", classAddr, "the hosts of URLs", func(r *snapshot.Resource) []string { return urlHosts(Fold(r.Notes)) }},
	//mutate:mask-vocab-logs ./model/mask ^TestVocabularySources$
	{"logs", classAddr, "the hosts in them", func(r *snapshot.Resource) []string {
		var out []string
		for _, l := range r.Logs {
			out = append(out, errorHosts(l)...)
		}
		return out
	}},
}

// Sources are the fields the vocabulary of a snapshot draws from.
func Sources() []Source { return slices.Clone(sources) }

// ForSnapshot is the vocabulary of a snapshot: the terms of every source
// of every resource. An id adds its canonical form and its non-numeric
// parts ("pve1" and "local-zfs" of "storage/pve1/local-zfs") as names.
// Extra ids (findings on resources gone from the snapshot) are added.
func ForSnapshot(snap *snapshot.Snapshot, extraIDs ...string) Vocabulary {
	var v Vocabulary
	addID := func(id string) {
		if strings.TrimSpace(id) == "" {
			return
		}
		v.IDs = append(v.IDs, id)
		if c := snapshot.CanonicalID(id); c != id {
			v.IDs = append(v.IDs, c)
		}
		parts := strings.Split(id, "/")
		for _, p := range parts[min(1, len(parts)-1):] {
			if strings.Trim(p, "0123456789") != "" {
				v.Names = append(v.Names, p)
			}
		}
	}
	if snap != nil {
		for i := range snap.Resources {
			r := &snap.Resources[i]
			for _, src := range sources {
				for _, t := range src.terms(r) {
					switch {
					case strings.TrimSpace(t) == "":
					case src.Class == classID:
						addID(t)
					case src.Class == className:
						v.Names = append(v.Names, t)
					case src.Class == classTag:
						v.Tags = append(v.Tags, t)
					default:
						v.Addresses = append(v.Addresses, t)
					}
				}
			}
		}
	}
	for _, id := range extraIDs {
		addID(id)
	}
	return v
}

// labelTerms are a resource's label values that name something (not a
// number or a boolean). And the prefixes of its keys ("acme.example" of
// "acme.example/team"), in key order.
func labelTerms(r *snapshot.Resource) []string {
	keys := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if prefix, _, ok := strings.Cut(k, "/"); ok {
			out = append(out, prefix)
		}
		v := strings.TrimSpace(r.Labels[k])
		_, errB := strconv.ParseBool(v)
		_, errF := strconv.ParseFloat(v, 64)
		if errB != nil && errF != nil {
			out = append(out, v)
		}
	}
	return out
}

// addressTerms are each address and its host alone ("10.0.0.5" of
// "10.0.0.5:22").
func addressTerms(r *snapshot.Resource) []string {
	var out []string
	for _, a := range r.Addresses {
		out = append(out, a)
		host, _, err := net.SplitHostPort(a)
		//mutate:mask-host-of-address ./model/mask,./eval ^TestVocabularySources$|^TestMaskedNamesNeverReachTheModel$
		if err == nil {
			out = append(out, host)
		}
	}
	return out
}

func jobField(r *snapshot.Resource, get func(snapshot.Job) []string) []string {
	if r.BackupStore == nil {
		return nil
	}
	var out []string
	for _, j := range r.BackupStore.Jobs {
		out = append(out, get(j)...)
	}
	return out
}

// verifiedIDs are the guests of the backup snapshots whose verification
// failed ("vm/100" of "vm/100/2026-11-30T02:00:00Z").
func verifiedIDs(r *snapshot.Resource) []string {
	if r.BackupStore == nil {
		return nil
	}
	var out []string
	for _, name := range r.BackupStore.VerifyFailed {
		parts := strings.SplitN(name, "/", 3)
		out = append(out, strings.Join(parts[:min(2, len(parts))], "/"))
	}
	return out
}

// Host shapes in folded error text: host:port, a dotted DNS name (its
// last label letters only) and the name a DNS lookup failed on. Labels
// may be in any script (internationalised names).
var (
	hostPortRE = regexp.MustCompile(`[\pL\pN][\pL\pN\pM.-]*:[0-9]{1,5}`)
	dottedRE   = regexp.MustCompile(`[\pL\pN](?:[\pL\pN\pM-]*[\pL\pN\pM])?(?:\.[\pL\pN](?:[\pL\pN\pM-]*[\pL\pN\pM])?)*\.\pL[\pL\pM]+`)
	lookupRE   = regexp.MustCompile(`lookup ([\pL\pN][\pL\pN\pM.-]*[\pL\pN\pM])`)
)

// errorHosts are the host names in an error or log line, folded: the
// hosts of URLs, of host:port, dotted names and DNS lookups, in order.
func errorHosts(s string) []string {
	fs := Fold(s)
	type hit struct {
		at   int
		host string
	}
	var hits []hit
	for _, h := range urlSpans(fs) {
		hits = append(hits, hit{h[0], fs[h[0]:h[1]]})
	}
	for _, loc := range hostPortRE.FindAllStringIndex(fs, -1) {
		host, _, _ := strings.Cut(fs[loc[0]:loc[1]], ":")
		if tokenAt(fs, loc[0], loc[0]+len(host)) && !strings.ContainsAny(fs[loc[1]:min(loc[1]+1, len(fs))], "0123456789") {
			hits = append(hits, hit{loc[0], host})
		}
	}
	for _, loc := range dottedRE.FindAllStringIndex(fs, -1) {
		if tokenAt(fs, loc[0], loc[1]) {
			hits = append(hits, hit{loc[0], fs[loc[0]:loc[1]]})
		}
	}
	for _, sub := range lookupRE.FindAllStringSubmatchIndex(fs, -1) {
		if tokenAt(fs, sub[2], sub[3]) {
			hits = append(hits, hit{sub[2], fs[sub[2]:sub[3]]})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at < hits[j].at })
	var out []string
	for _, h := range hits {
		if isHost(h.host) && !slices.Contains(out, h.host) {
			out = append(out, h.host)
		}
	}
	return out
}

// urlHosts are the hosts of the URLs in folded text fs, in order.
func urlHosts(fs string) []string {
	var out []string
	for _, h := range urlSpans(fs) {
		if host := fs[h[0]:h[1]]; !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out
}

// urlSpans are where the hosts of the URLs in folded text fs are (IPv6
// literals left out: they are found as addresses).
func urlSpans(fs string) [][]int {
	var out [][]int
	for _, sub := range urlRE.FindAllStringSubmatchIndex(fs, -1) {
		host := strings.TrimRight(fs[sub[4]:sub[5]], ".")
		if isHost(host) && !strings.HasPrefix(host, "[") {
			out = append(out, []int{sub[4], sub[4] + len(host)})
		}
	}
	return out
}

// isHost says whether a folded host found in text names something. It
// has a letter and is not a resource kind: "https://storage/..." is
// more often a path than a host, and a kind is no name.
func isHost(host string) bool {
	return strings.IndexFunc(host, unicode.IsLetter) >= 0 && !snapshot.Kind(host).Valid()
}

// tokenAt says whether fs[a:b] is a whole token of a host name: no word,
// '.' or '-' joins it on either side.
func tokenAt(fs string, a, b int) bool {
	joins := func(r rune) bool { return word(r) || r == '-' || r == '.' || r == '/' }
	if a > 0 && joins(lastRune(fs[:a])) {
		return false
	}
	if b < len(fs) {
		r := firstRune(fs[b:])
		if word(r) || r == '-' || r == '/' || r == '.' && b+1 < len(fs) && word(firstRune(fs[b+1:])) {
			return false
		}
	}
	return true
}
