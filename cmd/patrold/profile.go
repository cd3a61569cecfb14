package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile starts the CPU profile --cpuprofile asked for. The daemon
// has /debug/pprof on its API; one-shot commands (run, snapshot validate)
// are measured with this flag.
func (a *app) startProfile() error {
	if a.cpuProfile == "" || a.stopProfile != nil {
		return nil
	}
	f, err := os.Create(a.cpuProfile)
	if err != nil {
		return usage(fmt.Errorf("--cpuprofile: %w", err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	a.stopProfile = func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}
	return nil
}

// endProfile writes out the CPU profile, if one was started.
func (a *app) endProfile() error {
	if a.stopProfile == nil {
		return nil
	}
	stop := a.stopProfile
	a.stopProfile = nil
	if err := stop(); err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return nil
}
