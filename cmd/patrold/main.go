// Command patrold is the infrastructure patrol daemon and its CLI.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/termsafe"
)

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reload := make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	relayed := make(chan struct{})
	go func() { relayReloads(ctx, hup, reload); close(relayed) }()
	defer func() { signal.Stop(hup); stop(); <-relayed }()
	a := &app{reload: reload, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	root := newRoot(a)
	root.SetArgs(os.Args[1:])
	err := root.ExecuteContext(ctx)
	if perr := a.endProfile(); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(termsafe.NewWriter(os.Stderr), "patrold:", err)
		return exitCode(err)
	}
	return 0
}

// relayReloads turns each SIGHUP on hup into a reload request until ctx
// ends. A request already waiting absorbs the next signals: one reload
// reads the newest file anyway.
func relayReloads(ctx context.Context, hup <-chan os.Signal, reload chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}
}

// usageError marks bad usage or invalid configuration/input: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

func exitCode(err error) int {
	var ue *usageError
	var ie *findings.InputError
	if errors.As(err, &ue) || errors.As(err, &ie) {
		return exitUsage
	}
	return exitRuntime
}
