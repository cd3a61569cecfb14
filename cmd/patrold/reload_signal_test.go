package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// relayReloads forwards a SIGHUP, folds those that arrive while a reload
// waits, and returns once its context ends.
func TestRelayReloadsStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal)
	reload := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() { relayReloads(ctx, hup, reload); close(done) }()
	hup <- syscall.SIGHUP
	hup <- syscall.SIGHUP // taken while the first still waits: folded
	hup <- syscall.SIGHUP
	if got := len(reload); got != 1 {
		t.Fatalf("%d reloads waiting after three signals, want 1", got)
	}
	<-reload
	hup <- syscall.SIGHUP
	select {
	case <-reload:
	case <-time.After(5 * time.Second):
		t.Fatal("a signal after the reload was taken was not relayed")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("relayReloads still runs after its context ended")
	}
	select {
	case hup <- syscall.SIGHUP:
		t.Fatal("a signal was taken after the context ended")
	default:
	}
}
