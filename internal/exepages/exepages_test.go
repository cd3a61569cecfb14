package exepages

import (
	"reflect"
	"strings"
	"testing"
)

const sample = `00400000-00403000 r--p 00000000 fe:00 9986796                            /opt/patrold/bin/patrold
Size:                 12 kB
Rss:                  12 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
00403000-01ec1000 r-xp 00003000 fe:00 9986796                            /opt/patrold/bin/patrold
Rss:               17656 kB
Anonymous:             0 kB
03ee8000-03eeb000 r--p 03ae8000 fe:00 9986796                            /opt/patrold/bin/patrold
Rss:                  12 kB
Anonymous:             4 kB
03eeb000-03f75000 rw-p 03aeb000 fe:00 9986796                            /opt/patrold/bin/patrold
Rss:                 472 kB
Anonymous:             0 kB
03f75000-03f80000 r--p 00000000 fe:00 9986797                            /opt/patrold/bin/patrold two words (deleted)
Rss:                   8 kB
Anonymous:             0 kB
0e000000-0e021000 rw-p 00000000 00:00 0                                  [heap]
Rss:                 132 kB
Anonymous:           132 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 
Rss:                1024 kB
Anonymous:          1024 kB
7f0000200000-7f0000300000 r-xp 00000000 fe:00 12                         /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 984 kB
Anonymous:             0 kB
`

// TestParse reads every mapping of a sample smaps whole: ranges,
// permissions, paths with spaces, anonymous mappings, the two sizes.
func TestParse(t *testing.T) {
	got, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	const exe = "/opt/patrold/bin/patrold"
	want := []mapping{
		{start: 0x400000, end: 0x403000, perms: "r--p", path: exe, rss: 12 << 10},
		{start: 0x403000, end: 0x1ec1000, perms: "r-xp", path: exe, rss: 17656 << 10},
		{start: 0x3ee8000, end: 0x3eeb000, perms: "r--p", path: exe, rss: 12 << 10, anon: 4 << 10},
		{start: 0x3eeb000, end: 0x3f75000, perms: "rw-p", path: exe, rss: 472 << 10},
		{start: 0x3f75000, end: 0x3f80000, perms: "r--p", path: exe + " two words (deleted)", rss: 8 << 10},
		{start: 0xe000000, end: 0xe021000, perms: "rw-p", path: "[heap]", rss: 132 << 10, anon: 132 << 10},
		{start: 0x7f0000000000, end: 0x7f0000100000, perms: "rw-p", rss: 1024 << 10, anon: 1024 << 10},
		{start: 0x7f0000200000, end: 0x7f0000300000, perms: "r-xp", path: "/usr/lib/x86_64-linux-gnu/libc.so.6", rss: 984 << 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parse\n%+v\nwant\n%+v", got, want)
	}
}

// TestReleasable: only the executable's read-only mappings with no
// copied page and something resident. The attack is each near miss: a
// writable mapping of the binary, the relocated read-only one (an
// anonymous page), another file, an empty one.
func TestReleasable(t *testing.T) {
	maps, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	maps = append(maps, mapping{start: 0x5000000, end: 0x5001000, perms: "r-xp", path: "/opt/patrold/bin/patrold"})
	var got []uint64
	for _, m := range maps {
		if m.releasable("/opt/patrold/bin/patrold") {
			got = append(got, m.start)
		}
	}
	if want := []uint64{0x400000, 0x403000}; !reflect.DeepEqual(got, want) {
		t.Errorf("releasable %#x, want %#x", got, want)
	}
}

// TestParseRefusesWhatItCannotRead: each bad line is an error naming
// what is wrong.
func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"00400000-00403000 r--p 00000000 fe:00 1 /x\nRss: twelve kB\n", `smaps: Rss: strconv.ParseInt: parsing "twelve": invalid syntax`},
		{"00400000-00403000 r--p 00000000 fe:00 1 /x\nAnonymous: 12 MB\n", `smaps: Anonymous: want N kB, got " 12 MB"`},
		{"00400000-00403000 r--p 00000000\n", `smaps: mapping line "00400000-00403000 r--p 00000000": want at least 5 fields`},
		{"00403000-00400000 r--p 00000000 fe:00 1 /x\n", `smaps: mapping line "00403000-00400000 r--p 00000000 fe:00 1 /x": bad range or permissions`},
		{"0040000g-00403000 r--p 00000000 fe:00 1 /x\n", `smaps: mapping line "0040000g-00403000 r--p 00000000 fe:00 1 /x": bad range or permissions`},
	} {
		if _, err := parse(strings.NewReader(c.in)); err == nil || err.Error() != c.want {
			t.Errorf("parse(%q) = %v, want %s", c.in, err, c.want)
		}
	}
}

// marker is written at run time: its page is copied, and must keep what
// was written through a release.
var marker = [8192]byte{1}

// TestReleaseGivesTheBinaryBack, on this test binary: what its read-only
// mappings hold resident is given back (at most three quarters come
// back as this test runs on: fault-around maps 64 kB a fault), what it
// wrote is kept, and its code runs on. It measures a later release, not
// the first, whose rebuild also unmaps.
func TestReleaseGivesTheBinaryBack(t *testing.T) {
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		busyWork()
	}
	resident := func() int64 {
		t.Helper()
		n, err := Resident()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	marker[4096] = 42
	before := resident()
	if before == 0 {
		t.Fatal("nothing of the binary resident before the release")
	}
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := resident()
	if released < before/2 || after > before*3/4 {
		t.Errorf("resident %d kB before, %d kB after, %d kB released", before>>10, after>>10, released>>10)
	}
	if marker[0] != 1 || marker[4096] != 42 {
		t.Errorf("written data lost: %d %d", marker[0], marker[4096])
	}
	if got := strings.Repeat("ab", 3); got != "ababab" {
		t.Errorf("code after the release: %q", got)
	}
}

// FuzzParse: any input is read or refused, never a panic, and what is
// read is well formed.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("00400000-00403000 r--p 00000000 fe:00 1\nRss: 4 kB\n")
	f.Fuzz(func(t *testing.T, in string) {
		maps, err := parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range maps {
			if m.end < m.start || len(m.perms) != 4 {
				t.Fatalf("mapping %+v from %q", m, in)
			}
		}
	})
}
