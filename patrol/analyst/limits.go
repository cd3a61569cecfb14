package analyst

// Turn limits of the model stages (docs/MODEL_STAGES.md). Its guard reads
// them from this file's source.
const (
	// detectionTurnsBase, detectionTurnsPerFlag, detectionTurnsMin and
	// detectionTurnsMax give the detection loop's turn limit:
	// clamp(detectionTurnsBase + detectionTurnsPerFlag*flags,
	// detectionTurnsMin, detectionTurnsMax).
	detectionTurnsBase    = 5
	detectionTurnsPerFlag = 3
	detectionTurnsMin     = 8
	detectionTurnsMax     = 40
	// evaluationTurns bounds the evaluation pass over unmatched signals.
	evaluationTurns = 5
	// sweepTurnsExtra and sweepTurnsMax give the assessment sweep's turn
	// limit for n findings without a verdict: min(n + sweepTurnsExtra,
	// sweepTurnsMax).
	sweepTurnsExtra = 2
	sweepTurnsMax   = 12
)

// Triage and seed-context figures.
const (
	// watchMargin is how far below its trigger (in percentage points) a
	// metric raises a "watch" flag in triage.
	watchMargin = 5.0
	// seedContextPercent is the share of the context window left after the
	// answer reservation (MaxOutputTokens) that the seed context may use;
	// the rest stays free for tool results and the model's turns.
	seedContextPercent = 25
)

// DetectionTurns is the detection loop's turn limit for a triage with
// flags flags (signals plus watch flags).
func DetectionTurns(flags int) int {
	return min(max(detectionTurnsBase+detectionTurnsPerFlag*max(flags, 0), detectionTurnsMin), detectionTurnsMax)
}

// SweepTurns is the assessment sweep's turn limit for n findings left
// without a verdict.
func SweepTurns(n int) int { return min(max(n, 0)+sweepTurnsExtra, sweepTurnsMax) }

// SeedBudget is the token budget of the seed context for a model with the
// given context window and answer reservation.
func SeedBudget(contextWindow, maxOutputTokens int) int {
	return max(contextWindow-maxOutputTokens, 0) * seedContextPercent / 100
}
