package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// errStreamOrder is an event the accumulator refused (a malformed
// stream).
var errStreamOrder = errors.New("stream: an event does not continue the message")

// stream asks for the message as server-sent events and assembles it:
// text deltas joined per block, tool_use input from its partial JSON,
// stop reason and usage from message_delta. Nothing reads a piece before
// the whole message is in, so the answer is exactly what the same reply
// unstreamed would have been.
func (c *Client) stream(ctx context.Context, params sdk.MessageNewParams, raw **http.Response) (*sdk.Message, error) {
	st := c.svc.NewStreaming(ctx, params, option.WithResponseInto(raw))
	defer st.Close()
	var msg sdk.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			return nil, fmt.Errorf("%w: %v", errStreamOrder, err)
		}
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	return &msg, nil
}
