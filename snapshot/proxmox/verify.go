package proxmox

import (
	"strconv"
	"strings"
)

// verification is a PBS backup volume's last verification, as storage
// content lists it: state "ok" or "failed", and the verify task's UPID.
type verification struct {
	State string `json:"state"`
	UPID  string `json:"upid"`
}

// Verification states of a guest's newest backup (snapshot.Backup).
const (
	verifyOK     = "ok"
	verifyFailed = "failed"
	verifyNone   = "none"
)

// upidStart is the start time of a PBS task from its UPID
// (UPID:node:pid:pstart:task:starttime:type:id:auth:, hexadecimal);
// false when it does not parse.
func upidStart(upid string) (int64, bool) {
	parts := strings.Split(upid, ":")
	if len(parts) < 7 || parts[0] != "UPID" {
		return 0, false
	}
	v, err := strconv.ParseInt(parts[5], 16, 64)
	if err != nil || v <= 0 || v > maxUnix {
		return 0, false
	}
	return v, true
}

// verifiedAt is when a volume was last verified ok: its verify task's
// start, or its own ctime when the UPID does not say; 0 when it was not
// verified ok.
func (v volume) verifiedAt() int64 {
	if v.Verification == nil || v.Verification.State != verifyOK {
		return 0
	}
	if at, ok := upidStart(v.Verification.UPID); ok {
		return at
	}
	return int64(v.CTime.v)
}

// verifyState is a volume's state in a storage that verifies: ok,
// failed or none.
func (v volume) verifyState() string {
	if v.Verification == nil {
		return verifyNone
	}
	switch s := strings.ToLower(strings.TrimSpace(v.Verification.State)); s {
	case verifyOK, verifyFailed:
		return s
	}
	return verifyNone
}
