package main

import (
	"os"
	"runtime/debug"
)

// A one-shot run ends with its process, so the memory a run's garbage
// holds is given back when it exits. Collecting it along the way is CPU
// spent for nothing. oneShotGC has `patrold run` collect less often
// (oneShotGCPercent instead of Go's 100). It sets a soft memory limit
// from the snapshot file's size (oneShotLimit), which keeps the peak of a
// large fleet where it was. docs/PATROL_ARCHITECTURE.md (Performance) has
// the figures. GOGC or GOMEMLIMIT in the environment are the operator's
// and are left alone.
const (
	oneShotGCPercent = 400
	// oneShotLimitPerFile is the soft limit per byte of the file (1.5x).
	// The peak of a large fleet's run is the limit plus what is not
	// heap (the binary's pages, SQLite's cache): below the 2x goal with
	// room for those.
	oneShotLimitPerFile = 1.5
	// oneShotMinLimit is the least soft limit (256 MiB): a small file's
	// run is all garbage above its live heap, and a limit near that live
	// heap would have the collector run without end.
	oneShotMinLimit = 256 << 20
)

// oneShotLimit is the soft memory limit of a one-shot run of a snapshot
// file of size bytes.
func oneShotLimit(size int64) int64 {
	return max(int64(float64(size)*oneShotLimitPerFile), oneShotMinLimit)
}

// oneShotGC sets the collector of a one-shot run of the snapshot file at
// path ("" or a file that cannot be read: nothing is changed).
func oneShotGC(path string, getenv func(string) string) {
	if path == "" || getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	debug.SetMemoryLimit(oneShotLimit(fi.Size()))
	debug.SetGCPercent(oneShotGCPercent)
}
