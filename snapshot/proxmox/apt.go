package proxmox

import (
	"regexp"
	"sort"

	"github.com/patrold/patrold/snapshot"
)

// aptUpdate is one entry of GET /nodes/{node}/apt/update: a package with
// an update in the node's package cache (refreshed daily by pveupdate).
type aptUpdate struct {
	Package    string `json:"Package"`
	Title      string `json:"Title"`
	Version    string `json:"Version"`
	OldVersion string `json:"OldVersion"`
	Origin     string `json:"Origin"`
	Section    string `json:"Section"`
}

// securityRepo matches a security repository's name: Debian's origin
// label "Debian-Security", a suite such as "bookworm-security".
var securityRepo = regexp.MustCompile(`(?i)\b[a-z]+-security\b`)

// security reports whether the update comes from a security repository,
// as its origin, section or title names it.
func (u aptUpdate) security() bool {
	return securityRepo.MatchString(u.Origin) || securityRepo.MatchString(u.Section) || securityRepo.MatchString(u.Title)
}

// pendingUpdates sums a node's updates: the count, the security ones and
// the first names by name, security ones first. Entries without a
// package name are not counted.
func pendingUpdates(list []aptUpdate) *snapshot.Updates {
	out := &snapshot.Updates{}
	var sec, other []string
	for _, u := range list {
		if u.Package == "" {
			continue
		}
		out.Packages++
		if u.security() {
			out.Security++
			sec = append(sec, clipWord(u.Package))
			continue
		}
		other = append(other, clipWord(u.Package))
	}
	sort.Strings(sec)
	sort.Strings(other)
	for _, n := range append(sec, other...) {
		if len(out.Names) == snapshot.MaxUpdateNames {
			break
		}
		out.Names = append(out.Names, n)
	}
	return out
}
