package dirlock_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/internal/testkit"
)

// TestMain doubles as the second process: with DIRLOCK_HOLD set it takes
// the directory, says so, and waits for its stdin to close (or is killed).
func TestMain(m *testing.M) {
	if dir := os.Getenv("DIRLOCK_HOLD"); dir != "" {
		l, err := dirlock.Acquire(dir, "holder", "127.0.0.1:9477")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("held")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder starts a second process that holds dir until the returned stop
// closes its stdin; kill kills it with SIGKILL instead.
func holder(t *testing.T, dir string) (cmd *exec.Cmd, stop func()) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DIRLOCK_HOLD="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("holder: %q %v", line, err)
	}
	return cmd, func() { in.Close(); cmd.Wait() }
}

func TestSecondProcessIsRefusedNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	cmd, stop := holder(t, dir)
	_, err := dirlock.Acquire(dir, "serve", "")
	var held *dirlock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, dirlock.ErrHeld) || held.Holder == nil {
		t.Fatalf("second process: %v", err)
	}
	if held.Holder.PID != cmd.Process.Pid || held.Holder.Command != "holder" || held.Holder.API != "127.0.0.1:9477" {
		t.Fatalf("holder %+v, want pid %d", held.Holder, cmd.Process.Pid)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("the error does not name the holder: %v", err)
	}
	if ok, h, err := dirlock.Held(dir); !ok || err != nil || h.PID != cmd.Process.Pid {
		t.Fatalf("Held: %v %+v %v", ok, h, err)
	}
	stop()
	l, err := dirlock.Acquire(dir, "serve", "")
	if err != nil {
		t.Fatalf("after the holder released: %v", err)
	}
	if ok, _, err := dirlock.Held(dir); !ok || err != nil {
		t.Fatalf("Held while this process holds it: %v %v", ok, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if ok, _, err := dirlock.Held(dir); ok || err != nil {
		t.Fatalf("Held after release: %v %v", ok, err)
	}
}

// A holder killed with SIGKILL leaves no stale lock.
func TestKilledHolderLeavesNoLock(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := holder(t, dir)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	testkit.EventuallyState(t, 5*time.Second, "the lock is free after the holder was killed", func() (bool, string) {
		l, err := dirlock.Acquire(dir, "serve", "")
		if err != nil {
			return false, err.Error()
		}
		l.Release()
		return true, ""
	})
}

func TestSetAPIRecordsTheBoundAddress(t *testing.T) {
	dir := t.TempDir()
	before, err := dirlock.Acquire(dir, "serve", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer before.Release()
	first, err := dirlock.ReadHolder(dir)
	if err != nil || first == nil {
		t.Fatalf("holder %v %v", first, err)
	}
	if err := before.SetAPI("127.0.0.1:40123"); err != nil {
		t.Fatal(err)
	}
	h, err := dirlock.ReadHolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := *first
	want.API = "127.0.0.1:40123"
	if h == nil || *h != want {
		t.Fatalf("holder %+v, want %+v", h, want)
	}
}
