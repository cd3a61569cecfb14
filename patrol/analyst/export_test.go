package analyst

// Unsupported exposes grounding to the tests: the claims of texts about
// resourceID that the given tool results (JSON documents) do not support.
func Unsupported(resourceID string, results []string, texts ...string) []string {
	c := newCorpus()
	for _, r := range results {
		c.add([]byte(r))
	}
	return c.unsupported(resourceID, "", nil, texts...)
}

// Read exposes whether the tool results showed resourceID.
func Read(resourceID string, results []string) bool {
	c := newCorpus()
	for _, r := range results {
		c.add([]byte(r))
	}
	return c.read(resourceID)
}

// Index is a grounding index built once from tool results.
type Index struct{ c *corpus }

// NewIndex indexes the tool results.
func NewIndex(results []string) Index {
	c := newCorpus()
	for _, r := range results {
		c.add([]byte(r))
	}
	return Index{c}
}

// Unsupported checks texts about resourceID against the index.
func (ix Index) Unsupported(resourceID string, texts ...string) []string {
	return ix.c.unsupported(resourceID, "", nil, texts...)
}

// FamilyWords exposes the words a claim names each quantity family by.
func FamilyWords() map[string][]string {
	out := map[string][]string{}
	for w, f := range familyWords {
		out[f] = append(out[f], w)
	}
	return out
}

// ThresholdWords exposes the words that mark a figure as a threshold.
func ThresholdWords() []string {
	out := make([]string, 0, len(thresholdWords))
	for w := range thresholdWords {
		out = append(out, w)
	}
	return out
}
