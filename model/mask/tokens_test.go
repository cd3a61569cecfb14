package mask

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// TestMaskTokenVariants is the attack of issue 37: a name written the
// ways a person (or a hostile note) writes it is masked all the same.
// Each row is the whole masked text.
func TestMaskTokenVariants(t *testing.T) {
	m := New(Vocabulary{
		IDs:       []string{"vm/101"},
		Names:     []string{"billing-db", "pve1", "pve10", "straße-db", "café-01"},
		Addresses: []string{"fd00:20::40"},
	})
	for _, c := range []struct{ name, in, want string }{
		{"typographic quotes", "guest “billing-db” and ‘pve1’ and «pve10»",
			"guest “masked-name-1” and ‘masked-name-3’ and «masked-name-4»"},
		{"em and en dash", "pve1—billing-db–pve10", "masked-name-3—masked-name-1–masked-name-4"},
		{"other case", "BILLING-DB on Pve1, not PVE10x", "masked-name-1 on masked-name-3, not PVE10x"},
		{"fullwidth", "ｂｉｌｌｉｎｇ－ｄｂ on ｐｖｅ１０", "masked-name-1 on masked-name-4"},
		{"fullwidth id", "ＶＭ／１０１ is down", "vm/masked-id-1 is down"},
		{"full case fold", "STRASSE-DB and Straße-DB", "masked-name-5 and masked-name-5"},
		{"decomposed accent", "cafe\u0301-01 up", "masked-name-2 up"},
		{"zero-width inside", "pve\u200b1 and bill\u00ading-db", "masked-name-3 and masked-name-1"},
		{"next to ideographs", "节点pve1已离线", "节点masked-name-3已离线"},
		{"inside a longer word", "pve1é pve1_x xpve1 pve10", "pve1é pve1_x xpve1 masked-name-4"},
		{"ipv6 other form", "peer FD00:20:0::40 and [fd00:20::40]:22", "peer masked-addr-1 and [masked-addr-1]:22"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := m.Mask(c.in); got != c.want {
				t.Fatalf("masked\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestMaskFreeTextAddresses: addresses and hosts no resource lists are
// masked where text carries them. So are IPv4 and IPv6 addresses (not
// times or MACs), and the host and credentials of a URL.
func TestMaskFreeTextAddresses(t *testing.T) {
	m := New(Vocabulary{})
	in := "peer 2001:db8::7 at 02:00:00, mac aa:bb:cc:dd:ee:ff, std::vector; " +
		"GET https://admin:s3cret@pbs.corp.lan:8007/api2/json failed; see http://[fe80::1]/x and ＨＴＴＰＳ：／／backup-host／y"
	want := "peer masked-addr-1 at 02:00:00, mac aa:bb:cc:dd:ee:ff, std::vector; " +
		"GET https://masked-name-1@masked-addr-3:8007/api2/json failed; see http://[masked-addr-2]/x and ＨＴＴＰＳ：／／masked-addr-4／y"
	if got := m.Mask(in); got != want {
		t.Fatalf("masked\n%s\nwant\n%s", got, want)
	}
	if back := m.Unmask(want); back != in {
		t.Fatalf("unmasked\n%s\nwant\n%s", back, in)
	}
}

// TestVocabularySources: a snapshot's vocabulary holds every source of
// names, whole. Ids, names, tags, label values, addresses, parents (in
// the snapshot or not), backup storages. Datastore jobs, verified
// snapshots, and the hosts inside URLs and errors.
func TestVocabularySources(t *testing.T) {
	at := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{{
		ID: "VM/210", Kind: snapshot.KindVM, Name: "billing-db", Parent: "node/pve-gone", Parents: []string{"storage/pve-gone/tank"},
		Tags: []string{"prod-eu"}, Labels: map[string]string{"team": "payments", "acme.example/owner": "jdoe", "pinned": "true", "slot": "42"},
		Addresses: []string{"10.20.30.40:22", "[fd00:20::40]:22"},
		Backup:    &snapshot.Backup{LastError: "dial tcp pbs-main:8007: connection refused; lookup pbs2.corp.lan: no such host", Storage: "storage/pbs/offsite-store", LastSuccessAt: &at},
		BackupStore: &snapshot.BackupStore{Jobs: []snapshot.Job{{ID: "sync-nightly-eu", Type: "sync", LastError: "GET https://remote-pbs.example.net/api: 401"}},
			VerifyFailed: []string{"ct/305/2026-11-30T02:00:00Z"}},
		Notes: "wiki at https://wiki.corp.lan/x; owner jdoe",
		Logs:  []string{"kernel: nfs: server nas01.corp.lan not responding"},
	}}}
	got := ForSnapshot(snap, "vm/999")
	want := Vocabulary{
		IDs: []string{"VM/210", "vm/210", "node/pve-gone", "storage/pve-gone/tank", "storage/pbs/offsite-store", "ct/305", "vm/999"},
		Names: []string{"billing-db", "pve-gone", "pve-gone", "tank", "pbs", "offsite-store",
			"sync-nightly-eu"},
		Tags:      []string{"prod-eu", "acme.example", "jdoe", "payments"},
		Addresses: []string{"10.20.30.40:22", "10.20.30.40", "[fd00:20::40]:22", "fd00:20::40", "pbs-main", "pbs2.corp.lan", "remote-pbs.example.net", "wiki.corp.lan", "nas01.corp.lan"},
	}
	for _, c := range []struct {
		class     string
		got, want []string
	}{{"ids", got.IDs, want.IDs}, {"names", got.Names, want.Names}, {"tags", got.Tags, want.Tags}, {"addresses", got.Addresses, want.Addresses}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s\n got  %q\n want %q", c.class, c.got, c.want)
		}
	}
	// Every term is masked in free text.
	m := New(got)
	text := "billing-db (VM/210) on PVE-GONE, backups to offsite-store via PBS-MAIN and pbs2.corp.lan; " +
		"team payments, owner jdoe; job sync-nightly-eu; ct/305 failed verify; nas01.corp.lan"
	masked := m.Mask(text)
	for _, term := range []string{"billing-db", "210", "pve-gone", "offsite-store", "pbs-main", "pbs2", "payments", "jdoe", "sync-nightly", "305", "nas01"} {
		if strings.Contains(strings.ToLower(masked), term) {
			t.Errorf("%q is in %s", term, masked)
		}
	}
}

// TestFoldRoundTrip: what Unmask gives back folds to what was masked;
// text already folded comes back exactly.
func TestFoldRoundTrip(t *testing.T) {
	m := New(Vocabulary{Names: []string{"pve1", "billing-db"}, IDs: []string{"vm/101"}})
	for _, s := range []string{"PVE1 “billing-db”", "ｖｍ／１０１", "pve1 billing-db vm/101 — ok"} {
		back := m.Unmask(m.Mask(s))
		if Fold(back) != Fold(s) {
			t.Errorf("round trip of %q gave %q", s, back)
		}
		if Fold(s) == s && back != s {
			t.Errorf("folded %q came back as %q", s, back)
		}
	}
}
