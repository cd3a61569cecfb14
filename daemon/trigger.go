package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/patrol"
)

// triggerTimeout bounds `patrold trigger`'s wait for the writer.
const triggerTimeout = 10 * time.Second

// serveTriggers takes trigger requests until ctx ends: always on a
// single instance, on the writer only in cluster mode (a standby does
// not subscribe). The bus refuses what does not verify or decode.
func (m *messaging) serveTriggers(ctx context.Context, d *Daemon) {
	if err := m.bus.ServeTriggers(ctx, d.takeTrigger); err != nil && ctx.Err() == nil {
		d.log.Error("trigger subject stopped", "err", err)
	}
}

// takeTrigger admits one verified trigger request: a scope the rule
// refuses is answered invalid, naming the field; the rest goes to the
// same trigger limits as the Alertmanager hook.
func (d *Daemon) takeTrigger(req contracts.TriggerRequest) contracts.TriggerAnswer {
	//mutate:nats-trigger-scope-checked ./daemon ^TestNATSTrigger
	if err := patrol.CheckScope(req.Resources, req.Reason); err != nil {
		return contracts.TriggerAnswer{Outcome: contracts.TriggerInvalid, Resources: []string{}, Error: err.Error()}
	}
	reason := req.Reason
	if reason == "" {
		reason = "nats trigger"
	}
	out, id, err := d.triggers.Request(req.Resources, reason)
	if err != nil {
		d.log.Warn("trigger request not started", "err", err)
		return contracts.TriggerAnswer{Outcome: string(patrol.TriggerRefused), Resources: req.Resources, Error: err.Error()}
	}
	return contracts.TriggerAnswer{Outcome: string(out), RunID: id, Resources: req.Resources}
}

// SendTrigger asks the writer for a scoped run over resources
// (`patrold trigger`), signed with the deployment key, and returns its
// signed answer; an answer carrying an error is returned with it.
func (r *Root) SendTrigger(ctx context.Context, resources []string, reason string) (contracts.TriggerAnswer, error) {
	if err := patrol.CheckScope(resources, reason); err != nil {
		return contracts.TriggerAnswer{}, configErr(err)
	}
	bo, err := clientBusOptions(r.cfg, "trigger", embedded.RoleDaemon)
	if err != nil {
		return contracts.TriggerAnswer{}, configErr(err)
	}
	b, err := r.newBus(bo, r.log, nil, false)
	if err != nil {
		return contracts.TriggerAnswer{}, configErr(err)
	}
	// Dial, not Start: a sender needs no stream (docs/NATS.md#trigger-requests).
	if err := b.Dial(); err != nil {
		return contracts.TriggerAnswer{}, err
	}
	defer b.Close()
	ans, err := b.RequestTrigger(ctx, contracts.TriggerRequest{Resources: resources, Reason: reason}, triggerTimeout)
	if err == nil && ans.Error != "" {
		err = errors.New("trigger: " + ans.Outcome + ": " + ans.Error)
	}
	return ans, err
}
