package openai

import (
	"context"
	"errors"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// errStreamOrder is a chunk the accumulator refused (a malformed stream).
var errStreamOrder = errors.New("stream: a chunk does not continue the completion")

// stream asks for the completion as server-sent events (usage in the last
// chunk) and assembles it: text pieces joined, tool call ids, names and
// argument pieces joined by index. Nothing reads a piece before the whole
// answer is in, so the answer is exactly what the same reply unstreamed
// would have been.
func (c *Client) stream(ctx context.Context, params sdk.ChatCompletionNewParams, raw **http.Response) (*sdk.ChatCompletion, error) {
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	st := c.svc.NewStreaming(ctx, params, option.WithResponseInto(raw))
	defer st.Close()
	var acc sdk.ChatCompletionAccumulator
	for st.Next() {
		if !acc.AddChunk(st.Current()) {
			return nil, errStreamOrder
		}
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	return &acc.ChatCompletion, nil
}
