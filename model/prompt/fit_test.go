package prompt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/patrold/patrold/model"
)

// bigConversation holds three tool results of n bytes each ('Q', 'W',
// 'Z' repeated), oldest first.
func bigConversation(c *Composer, n int) *Conversation {
	cv := c.Conversation()
	cv.Instruct("Patrol the fleet.")
	for i, ch := range []string{"Q", "W", "Z"} {
		call := model.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: "list_resources"}
		cv.Assistant(&model.Response{ToolCalls: []model.ToolCall{call}})
		cv.ToolResult(call, strings.Repeat(ch, n))
	}
	return cv
}

// TestFitCutsTheOldestToolResultWithANotice: a request over the window is
// brought within it by cutting the oldest tool result only, and the cut
// is announced after its fence with the bytes kept and the bytes it had.
func TestFitCutsTheOldestToolResultWithANotice(t *testing.T) {
	c := newComposer(t, nil)
	cv := bigConversation(c, 8000)
	whole, err := bigConversation(c, 8000).Request(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	const maxOutput = 500
	window := model.EstimateTokens(whole.Request) + maxOutput - 1000 // 1000 tokens too many
	p, err := cv.Fit(nil, 0, window, maxOutput)
	if err != nil {
		t.Fatal(err)
	}
	if got := model.EstimateTokens(p.Request) + maxOutput; got > window {
		t.Fatalf("fitted request %d tokens with the answer, window %d", got, window)
	}
	msgs := p.Request.Messages
	first := msgs[2].Content
	kept := strings.Count(first, "Q")
	want := fence(p.Nonce, KindToolResult, "list_resources", strings.Repeat("Q", kept)) + "\n" + fmt.Sprintf(CutNotice, kept, 8000)
	if first != want {
		t.Fatalf("cut result\n%q\nwant\n%q", first, want)
	}
	if kept < 3000 || kept > 4000 { // about 1000 tokens of 4 bytes and the notice went
		t.Fatalf("kept %d bytes of 8000", kept)
	}
	for i, ch := range map[int]string{4: "W", 6: "Z"} {
		if want := fence(p.Nonce, KindToolResult, "list_resources", strings.Repeat(ch, 8000)); msgs[i].Content != want {
			t.Fatalf("message %d was cut too:\n%.200q", i, msgs[i].Content)
		}
	}
	// The cut stays: the next request is rendered from the cut result.
	again, err := cv.Request(nil, 0)
	if err != nil || again.Request.Messages[2].Content != strings.ReplaceAll(want, p.Nonce, again.Nonce) {
		t.Fatalf("next request: %v\n%.300q", err, again.Request.Messages[2].Content)
	}
}

// TestFitEmptiesOlderResultsBeforeTheNewest: when the oldest result is not
// enough, it is emptied (the notice says 0 bytes kept) and the next one is
// cut; the newest stays whole.
func TestFitEmptiesOlderResultsBeforeTheNewest(t *testing.T) {
	c := newComposer(t, nil)
	cv := bigConversation(c, 4000)
	whole, _ := bigConversation(c, 4000).Request(nil, 0)
	window := model.EstimateTokens(whole.Request) - 1500 // more than one result's 1000 tokens
	p, err := cv.Fit(nil, 0, window, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := p.Request.Messages
	if want := fence(p.Nonce, KindToolResult, "list_resources", "") + "\n" + fmt.Sprintf(CutNotice, 0, 4000); msgs[2].Content != want {
		t.Fatalf("oldest\n%q\nwant\n%q", msgs[2].Content, want)
	}
	if !strings.HasSuffix(msgs[4].Content, "4000 bytes to keep the request within the model's context window; ask for less at a time (one resource, a smaller limit) to see the rest]") {
		t.Fatalf("second result carries no notice: %.100q", msgs[4].Content[len(msgs[4].Content)-200:])
	}
	if want := fence(p.Nonce, KindToolResult, "list_resources", strings.Repeat("Z", 4000)); msgs[6].Content != want {
		t.Fatal("newest result was cut")
	}
}

// TestFitRefusesWhatCannotFit: with nothing left to cut, a conversation
// over the window ends with ErrContextFull, never a request over it.
func TestFitRefusesWhatCannotFit(t *testing.T) {
	c := newComposer(t, nil)
	cv := c.Conversation()
	cv.Data(KindSnapshot, "fleet", strings.Repeat("x", 40000))
	if _, err := cv.Fit(nil, 0, 8192, 1024); !errors.Is(err, ErrContextFull) {
		t.Fatalf("err = %v, want ErrContextFull", err)
	}
	cv = bigConversation(c, 40000)
	if _, err := cv.Fit(nil, 0, 100, 50); !errors.Is(err, ErrContextFull) {
		t.Fatalf("err = %v, want ErrContextFull", err)
	}
}

// TestFitCutsOnRuneBoundaries is the attack: a result of multi-byte runes
// is never cut inside one (the request stays valid UTF-8).
func TestFitCutsOnRuneBoundaries(t *testing.T) {
	c := newComposer(t, nil)
	call := model.ToolCall{ID: "c1", Name: "get_resource"}
	for window := 2000; window < 2010; window++ {
		cv := c.Conversation()
		cv.Assistant(&model.Response{ToolCalls: []model.ToolCall{call}})
		cv.ToolResult(call, strings.Repeat("€ü", 3000))
		p, err := cv.Fit(nil, 0, window, 0)
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Request.Messages[1].Content; !utf8.ValidString(s) {
			t.Fatalf("window %d: invalid UTF-8 after the cut", window)
		}
	}
}
