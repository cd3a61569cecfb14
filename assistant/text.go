package assistant

import "github.com/patrold/patrold/model/prompt"

// Caps on text patrold writes itself (summaries, approval reasons, notes).
// Untrusted or model-written text reaches them only through safeText,
// which neutralises, drops invisible characters, folds look-alikes and
// caps the length.
const (
	maxReasonRunes  = 280
	maxSummaryRunes = 600
	maxNoteRunes    = 1000
)

// safeText is prompt.SafeText: the one treatment of untrusted text that
// patrold embeds in its own records and events.
func safeText(s string, maxRunes int) string { return prompt.SafeText(s, maxRunes) }

// safeName is prompt.Name: a neutralised, length-capped resource name or id.
func safeName(s string) string { return prompt.Name(s) }
