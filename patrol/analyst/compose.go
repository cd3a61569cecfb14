package analyst

import (
	"github.com/patrold/patrold/model"
)

// countingTokens estimates the tokens a conversation part adds to a
// request: its text, its fence lines and the message overhead.
func countingTokens(text string) int {
	const fenceChars = 2*len("<<<UNTRUSTED kind=tool_result label=\"\" nonce=>>>") + 2*32 + 80
	return model.EstimateTextTokens(text) + (fenceChars+model.CharsPerToken-1)/model.CharsPerToken + model.MessageOverheadTokens
}
