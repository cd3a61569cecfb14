//go:build linux && cgo

package store

// ProbeCHeap and RaiseCHeapThresholds measure the C allocator
// (trim_glibc.go).
var (
	ProbeCHeap           = probeCHeap
	RaiseCHeapThresholds = raiseCHeapThresholds
)
