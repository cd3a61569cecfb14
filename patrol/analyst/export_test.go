package analyst

// Unsupported exposes grounding to the tests: the claims of evidence that
// the given tool results do not support.
func Unsupported(results []string, evidence string) []string {
	c := newCorpus()
	for _, r := range results {
		c.add(r)
	}
	return c.unsupported(evidence)
}
