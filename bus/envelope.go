package bus

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/contracts"
)

// HeaderContentType marks a structured CloudEvent on the NATS message.
const HeaderContentType = "Content-Type"

// EventMessage builds the NATS message for an outbox row: subject
// "<prefix>.<row.Subject>", the structured CloudEvent as the body and the
// row id as the Nats-Msg-Id header.
//
// The body is contracts.AppendEnvelope: row.Data spliced in as stored.
func EventMessage(prefix, source string, row contracts.OutboxEvent) (*nats.Msg, error) {
	return EventMessageRef(prefix, source, "", row)
}

// EventMessageRef is EventMessage with the envelope's dataref ("": none).
func EventMessageRef(prefix, source, dataref string, row contracts.OutboxEvent) (*nats.Msg, error) {
	if !validRelative(row.Subject) {
		return nil, fmt.Errorf("subject %q is not a relative NATS subject", row.Subject)
	}
	if row.ID == "" {
		return nil, errors.New("id is empty")
	}
	if len(row.Data) == 0 {
		return nil, errors.New("data is empty")
	}
	body, err := contracts.AppendEnvelopeRef(make([]byte, 0, len(row.Data)+192+len(row.ID)+len(source)+len(row.Type)+len(row.ResourceID)+len(dataref)), row, source, dataref)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	msg := nats.NewMsg(contracts.FullSubject(prefix, row.Subject))
	msg.Header.Set(jetstream.MsgIDHeader, row.ID)
	msg.Header.Set(HeaderContentType, contracts.ContentTypeEvent)
	msg.Data = body
	return msg, nil
}

// validRelative reports whether a relative subject from an outbox row is
// publishable: tokens separated by dots, none empty, no wildcards or spaces.
func validRelative(s string) bool {
	if s == "" {
		return false
	}
	tok := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if tok == 0 {
				return false
			}
			tok = 0
		case c == '*' || c == '>' || c <= ' ' || c == 0x7f:
			return false
		default:
			tok++
		}
	}
	return tok > 0
}
