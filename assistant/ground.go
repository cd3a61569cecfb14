package assistant

import (
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
)

// UngroundedMarker replaces a figure, time or id in a model's note or
// approval reason that no tool result of the session supports.
const UngroundedMarker = "[ungrounded]"

// fileText is the one filing path of the model's words a session keeps
// (its note, an approval's reason), the model stages' grounding
// (docs/ASSISTANT_SAFETY.md#model-text-and-approvals):
//  1. normalised first (prompt.SafeText: "１２" is the 12 it is stored as);
//  2. grounded by named quantities (model/ground). A figure is replaced
//     by UngroundedMarker when no quantity the text names supports it.
//     The quantities are the finding's resource's, as a tool result of
//     this session showed them. A time, id or node name no tool result
//     showed is replaced too;
//  3. stored as checked, a prompt.Text capped once more after the markers.
//
// It returns the text and what it replaced, in text order.
func (e *env) fileText(text string, maxRunes int) (prompt.Text, []string) {
	grounded, stripped := e.corpus.Strip(e.finding.ResourceID, e.finding.Key, nil, prompt.SafeText(text, maxRunes), UngroundedMarker)
	return prompt.Safe(grounded, maxRunes), stripped
}

// seed indexes the tool results of a resumed session's conversation:
// what the model read before it parked grounds what it writes after.
func (e *env) seed(msgs []model.Message) {
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			e.corpus.Add([]byte(m.Content))
		}
	}
}
