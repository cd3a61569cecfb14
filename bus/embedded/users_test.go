package embedded_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/patrold/patrold/bus/embedded"
)

// A fresh directory gets one 0600 seed per role; a second start reads
// the same keys back.
func TestSeedsGeneratedOnceAndPrivate(t *testing.T) {
	dir := t.TempDir()
	first, err := embedded.LoadOrCreateSeeds(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(embedded.Roles) {
		t.Fatalf("%d keys, want one per role: %v", len(first), first)
	}
	for _, r := range embedded.Roles {
		fi, err := os.Stat(filepath.Join(dir, embedded.SeedFile(r)))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want mode 0600", r, fi, err)
		}
		if !nkeys.IsValidPublicUserKey(first[r]) {
			t.Fatalf("%s: %q is not a user public key", r, first[r])
		}
	}
	again, err := embedded.LoadOrCreateSeeds(dir)
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("second start: %v %v, want %v", again, err, first)
	}
}

// A seed others can read, or one that is not a user seed, is refused
// naming the file.
func TestBadSeedsRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := embedded.LoadOrCreateSeeds(dir); err != nil {
		t.Fatal(err)
	}
	worker := filepath.Join(dir, embedded.SeedFile(embedded.RoleWorker))
	if err := os.Chmod(worker, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := embedded.LoadOrCreateSeeds(dir)
	if want := "nats credentials " + worker + ": mode 0644 lets group or others read it; chmod 600 it"; err == nil || err.Error() != want {
		t.Fatalf("readable seed: %v, want %s", err, want)
	}
	acct, _ := nkeys.CreateAccount()
	seed, _ := acct.Seed()
	if err := os.WriteFile(worker, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(worker, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = embedded.LoadOrCreateSeeds(dir)
	if want := "nats credentials " + worker + ": not an nkey user seed"; err == nil || err.Error() != want {
		t.Fatalf("account seed: %v, want %s", err, want)
	}
	if err := os.WriteFile(worker, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err = embedded.LoadOrCreateSeeds(dir); !errors.Is(err, nkeys.ErrNoSeedFound) {
		t.Fatalf("garbage seed: %v, want %v", err, nkeys.ErrNoSeedFound)
	}
}
