package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/contracts"
)

// ServeTriggers takes trigger requests on contracts.TriggerSubject until
// ctx ends (docs/NATS.md#trigger-requests), in the writer's queue group.
// A request:
//   - that does not verify with the guard is refused (counted, logged
//     once per sender) and never reaches take;
//   - that does not decode is answered invalid, naming the field;
//   - else is take's to answer.
//
// A request with a reply subject gets a signed answer.
func (b *Bus) ServeTriggers(ctx context.Context, take func(contracts.TriggerRequest) contracts.TriggerAnswer) error {
	sub, err := b.nc.QueueSubscribe(contracts.TriggerSubject(b.Prefix()), contracts.TriggerQueue, func(m *nats.Msg) {
		ans := b.triggerAnswer(m, take)
		if m.Reply == "" {
			return
		}
		data, _ := json.Marshal(ans)
		out := &nats.Msg{Subject: m.Reply, Data: data}
		b.guard.SignAnswer(m, out)
		if err := m.RespondMsg(out); err != nil {
			b.log.Warn("answer a trigger request", "err", err)
		}
	})
	if err != nil {
		return fmt.Errorf("serve trigger requests: %w", err)
	}
	<-ctx.Done()
	return sub.Unsubscribe()
}

func (b *Bus) triggerAnswer(m *nats.Msg, take func(contracts.TriggerRequest) contracts.TriggerAnswer) contracts.TriggerAnswer {
	//mutate:nats-trigger-verified ./daemon ^TestNATSTrigger
	if err := b.guard.CheckNow(contracts.StemTrigger, m); err != nil {
		return contracts.TriggerAnswer{Outcome: contracts.TriggerUnauthenticated, Resources: []string{}, Error: err.Error()}
	}
	req, err := contracts.DecodeTriggerRequest(m.Data)
	if err != nil {
		return contracts.TriggerAnswer{Outcome: contracts.TriggerInvalid, Resources: []string{}, Error: err.Error()}
	}
	return take(req)
}

// RequestTrigger sends req, signed, to the writer and returns its
// answer, which must verify as the writer's answer to req.
func (b *Bus) RequestTrigger(ctx context.Context, req contracts.TriggerRequest, timeout time.Duration) (contracts.TriggerAnswer, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return contracts.TriggerAnswer{}, err
	}
	m := nats.NewMsg(contracts.TriggerSubject(b.Prefix()))
	m.Data = data
	b.guard.Sign(m)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := b.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return contracts.TriggerAnswer{}, fmt.Errorf("trigger: no writer answered on %s: %w", m.Subject, err)
	}
	if err := b.guard.CheckAnswer(contracts.StemTrigger, m, msg); err != nil {
		return contracts.TriggerAnswer{}, fmt.Errorf("trigger: the answer is not authenticated with the deployment key: %w", err)
	}
	var ans contracts.TriggerAnswer
	if err := json.Unmarshal(msg.Data, &ans); err != nil || ans.Outcome == "" {
		return contracts.TriggerAnswer{}, fmt.Errorf("trigger: the answer is not a trigger answer: %v", err)
	}
	return ans, nil
}
