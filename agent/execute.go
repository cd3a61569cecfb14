package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// MaxParallelTools caps how many tool calls of one batch run at once.
const MaxParallelTools = 4

// execute runs the admitted calls of a batch. Independent calls run in
// parallel, at most MaxParallelTools at a time. A batch holding an
// infrastructure write, or one that both reads and writes findings, runs in
// provider order, one call at a time. Results are stored on the calls; the
// caller reads them only after execute returns.
func (s *Session) execute(ctx context.Context, calls []*call) {
	var run []*call
	for _, c := range calls {
		if c.admitted() {
			run = append(run, c)
		}
	}
	if mustSerialise(run) {
		for _, c := range run {
			c.result, c.err = runTool(ctx, c.entry.tool, c)
		}
		return
	}
	sem := make(chan struct{}, MaxParallelTools)
	var wg sync.WaitGroup
	for _, c := range run {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.result, c.err = runTool(ctx, c.entry.tool, c)
		}()
	}
	wg.Wait()
}

func mustSerialise(run []*call) bool {
	reads, writes := false, false
	for _, c := range run {
		if c.infraWrite() {
			return true
		}
		reads = reads || c.entry.tool.ReadsFindings
		writes = writes || c.entry.tool.WritesFindings
	}
	return reads && writes
}

// runTool runs one call under the tool's timeout. Idempotent tools are
// retried once on an error that is not a structured refusal from the tool
// and not the caller's cancellation.
func runTool(ctx context.Context, t Tool, c *call) (any, error) {
	attempts := 1
	if t.Idempotent {
		attempts = 2
	}
	var (
		result any
		err    error
	)
	for range attempts {
		result, err = attempt(ctx, t, c)
		if err == nil || ctx.Err() != nil || !retryable(err) {
			break
		}
	}
	return result, err
}

func retryable(err error) bool {
	var te *ToolError
	if errors.As(err, &te) {
		return te.Code == CodeExecutionFailed || te.Code == CodeTimeout
	}
	return true
}

type outcome struct {
	result any
	err    error
}

// attempt runs the handler once. The handler gets a context bounded by the
// tool's timeout; a handler that ignores it is abandoned at the deadline.
func attempt(ctx context.Context, t Tool, c *call) (any, error) {
	actx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{err: fmt.Errorf("tool %s panicked: %v", t.Name, p)}
			}
		}()
		r, err := t.Handler(actx, c.tc.Arguments)
		done <- outcome{result: r, err: err}
	}()
	select {
	case o := <-done:
		if o.err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, timeoutError(t)
		}
		return o.result, o.err
	case <-actx.Done():
		if ctx.Err() != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, ctx.Err())
		}
		return nil, timeoutError(t)
	}
}

func timeoutError(t Tool) *ToolError {
	return NewToolError(CodeTimeout, "%s did not finish within %s", t.Name, t.timeout()).With("timeout", t.timeout().String())
}
