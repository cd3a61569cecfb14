// Package exepages gives back the resident pages of the running binary
// that a daemon keeps mapped but does not use between runs: the code and
// read-only data its startup and its last run touched. A page the daemon
// needs again is mapped again on its next access. docs/PATROL_ARCHITECTURE.md
// (Performance) has the figures.
package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A mapping is one entry of /proc/self/smaps with the fields Release
// reads.
type mapping struct {
	start, end uint64
	perms      string
	path       string // "" for an anonymous mapping
	rss, anon  int64  // bytes
}

// releasable reports a mapping of the file at path whose pages can be
// unmapped without changing what the process reads there:
//   - not writable, so no write can have copied a page;
//   - no anonymous page, so no page was copied before it became read-only
//     (the dynamic linker's relocations);
//   - something resident to give back.
func (m mapping) releasable(path string) bool {
	return m.path == path && !strings.Contains(m.perms, "w") && m.anon == 0 && m.rss > 0
}

// Advice given to each releasable mapping, in order:
//   - NOHUGEPAGE: a binary in the page cache in large folios is otherwise
//     mapped back 2 MB at a time;
//   - RANDOM: a page read again from the file is read alone, as a small
//     folio, not with read-ahead into a large one;
//   - DONTNEED: the pages are unmapped (the page cache keeps them).
var advice = []uintptr{syscall.MADV_NOHUGEPAGE, syscall.MADV_RANDOM, syscall.MADV_DONTNEED}

// rebuilt drops the executable's page cache once per process: the kernel
// maps a large folio whole on a fault, so a binary cached in large
// folios (as a freshly written or read-ahead one is) keeps megabytes
// resident for a byte of code. What is read back comes in small pages
// (RANDOM: no read-ahead). The kernel drops only clean pages that no
// process maps, so the rebuild (rebuild):
//   - first writes back a binary written moments ago (fdatasync; a
//     fresh `go build` leaves its output dirty for up to 30 s);
//   - evicts the pages this process maps where the kernel lets it
//     (PAGEOUT: for a binary the process owns or may write), which also
//     splits a large folio;
//   - unmaps and drops rebuildRounds times: the daemon's other threads
//     map hot folios again between the unmap and the drop, and each
//     round drops those that were not touched in its window.
var rebuilt sync.Once

// rebuildRounds: a freshly built daemon (2 MB folios) kept 44 MB of its
// binary resident after a steady 100k run with one round, 15.7 MB with
// five, and 12.2 MB with PAGEOUT too (docs/PATROL_ARCHITECTURE.md,
// Performance).
const rebuildRounds = 5

// Release unmaps the resident pages of the executable's read-only file
// mappings and returns how many bytes were resident there; the first
// call also rebuilds the binary's page cache in small pages (rebuilt).
func Release() (int64, error) {
	exe, maps, err := mappings()
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range maps {
		if !m.releasable(exe) {
			continue
		}
		for _, a := range advice {
			if err := madvise(m, a); err != nil {
				return released, err
			}
		}
		released += m.rss
	}
	rebuilt.Do(func() { err = rebuild(exe, maps) })
	return released, err
}

// rebuild drops the page cache of the executable at exe (rebuilt), whose
// releasable mappings are maps.
func rebuild(exe string, maps []mapping) error {
	f, err := os.Open(exe)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", exe, err)
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("rebuild %s: fdatasync: %w", exe, err)
	}
	for range rebuildRounds {
		for _, m := range maps {
			if !m.releasable(exe) {
				continue
			}
			// PAGEOUT is refused by kernels before 5.4 and skips what it
			// may not evict: DONTNEED then unmaps alone.
			_ = madvise(m, unix.MADV_PAGEOUT)
			if err := madvise(m, syscall.MADV_DONTNEED); err != nil {
				return err
			}
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("rebuild %s: fadvise: %w", exe, err)
		}
	}
	return nil
}

// madvise gives advice a to the whole of mapping m.
func madvise(m mapping, a uintptr) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), a); errno != 0 {
		return fmt.Errorf("madvise %x-%x (%d): %w", m.start, m.end, a, errno)
	}
	return nil
}

// Resident is how many bytes of the executable's releasable mappings are
// resident now.
func Resident() (int64, error) {
	exe, maps, err := mappings()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range maps {
		if m.releasable(exe) {
			n += m.rss
		}
	}
	return n, nil
}

// mappings is the executable's path and this process's mappings. The
// kernel writes the link and the paths in smaps alike (a replaced
// binary's both end in " (deleted)").
func mappings() (string, []mapping, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return "", nil, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	maps, err := parse(f)
	return exe, maps, err
}

// parse reads smaps: a header line per mapping ("start-end perms offset
// dev inode [path]"), then its "Key: N kB" lines.
func parse(r io.Reader) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if key, rest, ok := bytes.Cut(line, []byte(":")); ok && len(out) > 0 && !bytes.ContainsAny(key, " -") {
			var dst *int64
			switch string(key) {
			case "Rss":
				dst = &out[len(out)-1].rss
			case "Anonymous":
				dst = &out[len(out)-1].anon
			default:
				continue
			}
			f := strings.Fields(string(rest))
			if len(f) != 2 || f[1] != "kB" {
				return nil, fmt.Errorf("smaps: %s: want N kB, got %q", key, rest)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("smaps: %s: %w", key, err)
			}
			*dst = kb << 10
			continue
		}
		m, err := header(string(line))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// header reads a mapping's line: "start-end perms offset dev inode",
// then the path (which may hold spaces) after padding, if any.
func header(line string) (mapping, error) {
	rest := line
	var f [5]string
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, " "); !ok && i < 4 {
			return mapping{}, fmt.Errorf("smaps: mapping line %q: want at least 5 fields", line)
		}
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if !ok || err1 != nil || err2 != nil || end < start || len(f[1]) != 4 {
		return mapping{}, fmt.Errorf("smaps: mapping line %q: bad range or permissions", line)
	}
	return mapping{start: start, end: end, perms: f[1], path: strings.TrimLeft(rest, " ")}, nil
}
