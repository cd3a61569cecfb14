package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/patrold/patrold/model"
)

// Names used in metrics, records and responses.
const (
	Name       = "script"
	ReplayName = "replay"
	// FinalText is returned, with no tool calls, once every turn is used.
	FinalText = "Script complete: no further actions."
)

// Stop reasons of scripted responses.
const (
	StopToolCalls = "tool_calls"
	StopEndTurn   = "end_turn"
)

// ErrReplayExhausted is returned (inside a *model.Error) when a replay is
// asked for more exchanges than were recorded: the re-executed run diverged.
var ErrReplayExhausted = errors.New("replay exhausted")

// Provider returns the turns of a Script in order, ignoring its input.
// Safe for concurrent use; Reset starts the script again.
type Provider struct {
	script *Script

	mu   sync.Mutex
	next int
}

var _ model.Provider = (*Provider)(nil)

// New returns a provider for s.
func New(s *Script) (*Provider, error) {
	if s == nil || len(s.Turns) == 0 {
		return nil, errors.New("script: turns: must not be empty")
	}
	return &Provider{script: s}, nil
}

// Load reads and parses the script at path (model.script.path).
func Load(path string) (*Provider, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model.script.path: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("model.script.path: read %s: %w", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("model.script.path: %s: %w", path, errEmpty)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("model.script.path: %s: %w", path, err)
	}
	return New(s)
}

// Name implements model.Provider.
func (p *Provider) Name() string { return Name }

// Remaining returns how many scripted turns are left.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.script.Turns) - p.next
}

// Reset starts the script from its first turn.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = 0
}

// Chat returns the next turn, or FinalText after the last one.
func (p *Provider) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, model.NewError(Name, model.ErrorCanceled, 0, "request canceled", err)
	}
	p.mu.Lock()
	turn := Turn{Text: FinalText}
	if p.next < len(p.script.Turns) {
		turn = p.script.Turns[p.next]
		p.next++
	}
	p.mu.Unlock()
	resp := &model.Response{Text: turn.Text, Model: Name, StopReason: StopEndTurn}
	for _, c := range turn.ToolCalls {
		c.Arguments = slices.Clone(c.Arguments)
		resp.ToolCalls = append(resp.ToolCalls, c)
	}
	if len(resp.ToolCalls) > 0 {
		resp.StopReason = StopToolCalls
	}
	if turn.Usage != nil {
		resp.Usage = *turn.Usage
	} else {
		resp.Usage = model.Usage{
			InputTokens:  model.EstimateTokens(req),
			OutputTokens: model.EstimateTextTokens(turn.Text) + len(turn.ToolCalls)*model.MessageOverheadTokens,
		}
	}
	return resp, nil
}

// Replay returns the responses (and errors) of a Recording in order.
type Replay struct {
	rec model.Recording

	mu   sync.Mutex
	next int
}

var _ model.Provider = (*Replay)(nil)

// NewReplay returns a provider re-playing rec.
func NewReplay(rec model.Recording) (*Replay, error) {
	if rec.Version != model.RecordingVersion {
		return nil, fmt.Errorf("replay: version: %d is not %d", rec.Version, model.RecordingVersion)
	}
	for i, ex := range rec.Exchanges {
		if ex.Response == nil && ex.Error == nil {
			return nil, fmt.Errorf("replay: exchanges[%d]: has neither response nor error", i)
		}
	}
	return &Replay{rec: rec}, nil
}

// Name implements model.Provider.
func (r *Replay) Name() string { return ReplayName }

// Chat returns the next recorded answer.
func (r *Replay) Chat(ctx context.Context, _ model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, model.NewError(ReplayName, model.ErrorCanceled, 0, "request canceled", err)
	}
	r.mu.Lock()
	if r.next >= len(r.rec.Exchanges) {
		n := len(r.rec.Exchanges)
		r.mu.Unlock()
		return nil, &model.Error{Provider: ReplayName, Kind: model.ErrorBadRequest,
			Err: fmt.Errorf("%w: all %d recorded exchanges used", ErrReplayExhausted, n)}
	}
	ex := r.rec.Exchanges[r.next]
	r.next++
	r.mu.Unlock()
	if ex.Error != nil {
		return nil, &model.Error{Provider: ReplayName, Kind: ex.Error.Kind, Status: ex.Error.Status,
			Err: errors.New("replayed: " + ex.Error.Message)}
	}
	resp := *ex.Response
	resp.ToolCalls = slices.Clone(resp.ToolCalls)
	return &resp, nil
}
