package agent

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the agent runtime's Prometheus metrics. One Metrics is shared
// by every session of a process; a nil *Metrics records nothing.
type Metrics struct {
	fsmBlocks         *prometheus.CounterVec
	finalAnswerBlocks prometheus.Counter
	loopDetections    prometheus.Counter
	lookFirst         prometheus.Counter
	toolCalls         *prometheus.CounterVec
}

// NewMetrics registers the agent metrics on reg. A nil reg returns nil
// (no metrics). Every label combination of the closed sets is pre-created.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{
		fsmBlocks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_agent_fsm_blocks_total",
			Help: "Tool calls refused by the session state machine, by state and tool kind.",
		}, []string{"state", "kind"}),
		finalAnswerBlocks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_agent_final_answer_blocks_total",
			Help: "Final answers refused because a write was not verified.",
		}),
		loopDetections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_agent_loop_detections_total",
			Help: "Tool calls refused as repeats of the same call since the last write.",
		}),
		lookFirst: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_agent_look_first_refusals_total",
			Help: "Operator questions refused because no real tool had been tried yet.",
		}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_agent_tool_calls_total",
			Help: "Tool calls by kind and outcome.",
		}, []string{"kind", "outcome"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.fsmBlocks, m.finalAnswerBlocks, m.loopDetections, m.lookFirst, m.toolCalls} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register agent metrics: %w", err)
	}
	for _, k := range Kinds() {
		for _, s := range States() {
			m.fsmBlocks.WithLabelValues(string(s), k.String())
		}
		for _, st := range statuses {
			m.toolCalls.WithLabelValues(k.String(), string(st))
		}
	}
	return m, nil
}

func (m *Metrics) toolCall(kind ToolKind, status Status) {
	if m != nil {
		m.toolCalls.WithLabelValues(kind.String(), string(status)).Inc()
	}
}

func (m *Metrics) fsmBlock(state State, kind ToolKind) {
	if m != nil {
		m.fsmBlocks.WithLabelValues(string(state), kind.String()).Inc()
	}
}

func (m *Metrics) finalAnswerBlock() {
	if m != nil {
		m.finalAnswerBlocks.Inc()
	}
}

func (m *Metrics) loopDetected() {
	if m != nil {
		m.loopDetections.Inc()
	}
}

func (m *Metrics) lookFirstRefusal() {
	if m != nil {
		m.lookFirst.Inc()
	}
}
