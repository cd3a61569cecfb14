package exepages

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary a child that releases its own binary
// and reports what is left of it (rebuildReport) instead of running the
// tests.
const childEnv = "EXEPAGES_REBUILD_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		rep, err := releaseAndReport()
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(rep)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// rebuildReport is what a child reports after its first release, in
// pages of 4 kB of its binary's releasable mappings.
type rebuildReport struct {
	Pages  int64 // the mappings' pages
	Cached int64 // of those, in the page cache
	Mapped int64 // of those, mapped in the child
	// Large is how many of the Mapped are in a large folio; -1 where
	// /proc/kpageflags cannot be read (not root).
	Large int64
}

// releaseAndReport releases the binary while another goroutine runs
// code all along (as a daemon's threads do), runs on a little, then
// reports.
func releaseAndReport() (rebuildReport, error) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			busyWork()
		}
	}()
	_, err := Release()
	for range 200 {
		busyWork()
	}
	stop.Store(true)
	<-done
	if err != nil {
		return rebuildReport{}, err
	}
	exe, maps, err := mappings()
	if err != nil {
		return rebuildReport{}, err
	}
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return rebuildReport{}, err
	}
	defer pm.Close()
	kf, kerr := os.Open("/proc/kpageflags")
	if kerr == nil {
		defer kf.Close()
	}
	var rep rebuildReport
	for _, m := range maps {
		// The releasable mappings, resident or not.
		if m.rss = 1; !m.releasable(exe) {
			continue
		}
		if err := rep.add(m, pm, kf); err != nil {
			return rep, err
		}
	}
	if kerr != nil {
		rep.Large = -1
	}
	return rep, nil
}

// add counts the pages of mapping m: in the page cache (mincore: the
// kernel reports the cache of a file the caller owns), mapped (pagemap)
// and in a large folio (kpageflags, when kf is open).
func (r *rebuildReport) add(m mapping, pm, kf *os.File) error {
	n := (m.end - m.start) / 4096
	vec := make([]byte, n)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(m.start), uintptr(m.end-m.start), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return fmt.Errorf("mincore: %w", errno)
	}
	buf := make([]byte, n*8)
	if _, err := pm.ReadAt(buf, int64(m.start/4096*8)); err != nil {
		return err
	}
	r.Pages += int64(n)
	for i := range n {
		r.Cached += int64(vec[i] & 1)
		e := binary.LittleEndian.Uint64(buf[i*8:])
		if e>>63 == 0 {
			continue
		}
		r.Mapped++
		pfn := e & (1<<55 - 1)
		if kf == nil || pfn == 0 {
			continue
		}
		var fl [8]byte
		if _, err := kf.ReadAt(fl[:], int64(pfn*8)); err != nil {
			return err
		}
		// KPF_COMPOUND_HEAD and KPF_COMPOUND_TAIL.
		if binary.LittleEndian.Uint64(fl[:])&(1<<15|1<<16) != 0 {
			r.Large++
		}
	}
	return nil
}

// busyWork runs code of several packages.
func busyWork() {
	s := make([]string, 0, 64)
	for i := range 64 {
		s = append(s, fmt.Sprintf("%x-%s", i*7919, strconv.Quote(strings.Repeat("é", i%5))))
	}
	sort.Strings(s)
	_, _ = json.Marshal(s)
}

// TestFirstReleaseRebuildsTheBinarysCache runs a copy of this test
// binary written moments ago (its pages dirty, in large folios where the
// file system makes them) as a child that releases while one goroutine
// runs code all along. After the release:
//   - the binary's page cache holds little more than what the child maps
//     again (the dirty pages were written back and dropped);
//   - where the kernel shows folios (root), no mapped page is in a large
//     folio (pages mapped at the drop were evicted too).
func TestFirstReleaseRebuildsTheBinarysCache(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "exepages.test")
	if err := copyInLargeWrites(self, exe); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var rep rebuildReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child's report %q: %v", out, err)
	}
	t.Logf("pages: %d, cached %d, mapped %d, in large folios %d", rep.Pages, rep.Cached, rep.Mapped, rep.Large)
	if rep.Mapped == 0 || rep.Cached > rep.Mapped+rep.Pages/4 {
		t.Errorf("after the release %d of the binary's %d pages are cached, %d mapped (want at most the mapped and a quarter)", rep.Cached, rep.Pages, rep.Mapped)
	}
	if rep.Large > 0 {
		t.Errorf("after the release %d of the %d mapped pages are in large folios, want none", rep.Large, rep.Mapped)
	}
}

// copyInLargeWrites writes a copy of the file at src to dst in 2 MB
// writes, as a linker writes its output: the page cache may hold it in
// large folios, dirty until written back.
func copyInLargeWrites(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	buf := make([]byte, 2<<20)
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	return out.Close()
}
