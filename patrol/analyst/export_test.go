package analyst

import "github.com/patrold/patrold/model/ground"

// Unsupported exposes grounding to the tests: the claims of texts about
// resourceID that the given tool results (JSON documents) do not support.
func Unsupported(resourceID string, results []string, texts ...string) []string {
	return NewIndex(results).Unsupported(resourceID, texts...)
}

// Read exposes whether the tool results showed resourceID.
func Read(resourceID string, results []string) bool {
	return NewIndex(results).c.Read(resourceID)
}

// Index is a grounding index built once from tool results.
type Index struct{ c *ground.Corpus }

// NewIndex indexes the tool results.
func NewIndex(results []string) Index {
	c := ground.NewCorpus()
	for _, r := range results {
		c.Add([]byte(r))
	}
	return Index{c}
}

// Unsupported checks texts about resourceID against the index.
func (ix Index) Unsupported(resourceID string, texts ...string) []string {
	return ix.c.Unsupported(resourceID, "", map[string]string{}, texts...)
}

// FamilyWords exposes the words a claim names each quantity family by.
func FamilyWords() map[string][]string { return ground.FamilyWords() }

// ThresholdWords exposes the words that mark a figure as a threshold.
func ThresholdWords() []string { return ground.ThresholdWords() }
