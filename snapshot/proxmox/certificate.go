package proxmox

import (
	"github.com/patrold/patrold/snapshot"
)

// firstToExpire is the certificate of GET /nodes/{node}/certificates/info
// that expires first; nil when none says when.
func firstToExpire(certs []certificateInfo) *snapshot.Certificate {
	var out *snapshot.Certificate
	for _, c := range certs {
		at := unixPtr(c.NotAfter)
		if at == nil {
			continue
		}
		if out == nil || at.Before(out.NotAfter) {
			out = &snapshot.Certificate{File: clipWord(c.Filename), Subject: clipText(c.Subject), NotAfter: *at}
		}
	}
	return out
}
