package analyst

// Turn limits of the model stages (docs/MODEL_STAGES.md). They are exported so
// docs/MODEL_STAGES.md can name them and its guard can read them.
const (
	// DetectionTurnsBase, DetectionTurnsPerFlag, DetectionTurnsMin and
	// DetectionTurnsMax give the detection loop's turn limit:
	// clamp(DetectionTurnsBase + DetectionTurnsPerFlag*flags,
	// DetectionTurnsMin, DetectionTurnsMax).
	DetectionTurnsBase    = 5
	DetectionTurnsPerFlag = 3
	DetectionTurnsMin     = 8
	DetectionTurnsMax     = 40
	// EvaluationTurns bounds the evaluation pass over unmatched signals.
	EvaluationTurns = 5
	// SweepTurnsExtra and SweepTurnsMax give the assessment sweep's turn
	// limit for n findings without a verdict: min(n + SweepTurnsExtra,
	// SweepTurnsMax).
	SweepTurnsExtra = 2
	SweepTurnsMax   = 12
)

// Triage and seed-context figures.
const (
	// WatchMargin is how far below its trigger (in percentage points) a
	// metric raises a "watch" flag in triage.
	WatchMargin = 5.0
	// SeedContextPercent is the share of the context window left after the
	// answer reservation (MaxOutputTokens) that the seed context may use;
	// the rest stays free for tool results and the model's turns.
	SeedContextPercent = 25
)

// DetectionTurns is the detection loop's turn limit for a triage with
// flags flags (signals plus watch flags).
func DetectionTurns(flags int) int {
	return min(max(DetectionTurnsBase+DetectionTurnsPerFlag*max(flags, 0), DetectionTurnsMin), DetectionTurnsMax)
}

// SweepTurns is the assessment sweep's turn limit for n findings left
// without a verdict.
func SweepTurns(n int) int { return min(max(n, 0)+SweepTurnsExtra, SweepTurnsMax) }

// SeedBudget is the token budget of the seed context for a model with the
// given context window and answer reservation.
func SeedBudget(contextWindow, maxOutputTokens int) int {
	return max(contextWindow-maxOutputTokens, 0) * SeedContextPercent / 100
}
