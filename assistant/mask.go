package assistant

import (
	"context"
	"fmt"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/snapshot"
)

// Masking names in a session (model.mask_names, docs/MODELS.md "Masking
// names"):
//   - the vocabulary starts with the finding's resource: its id, name,
//     node and tags;
//   - every live snapshot a tool collects adds its resources (the
//     finding's resource, its parents and whatever else the session reads);
//   - before the first request of a session (or of a resumed one) the
//     session collects once, so the finding's text and a resumed
//     conversation go out masked too; without it nothing is sent;
//   - requests go out masked and answers come back with the real names,
//     below the recorder: what the session stores and publishes carries
//     real names;
//   - a call naming a placeholder the session never sent is refused
//     (UNKNOWN_PLACEHOLDER) before the registry or the state machine sees it.

// findingVocabulary is what a session hides before it has read anything.
func findingVocabulary(f *findings.Finding) mask.Vocabulary {
	v := mask.ForSnapshot(nil, f.ResourceID)
	for _, n := range []string{f.ResourceName, f.ResourceNode} {
		if n != "" {
			v.Names = append(v.Names, n)
		}
	}
	v.Tags = append(v.Tags, f.ResourceTags...)
	return v
}

// maskedProvider wraps p so that the session's masker masks what is sent.
func (e *env) maskedProvider(p model.Provider) model.Provider {
	if e.masker == nil {
		return p
	}
	return &mask.Provider{Next: p, Masker: e.masker}
}

// learn adds the resources of snap to the vocabulary (names masked only).
func (e *env) learn(snap *snapshot.Snapshot) {
	if e.masker == nil || snap == nil {
		return
	}
	e.masker.Add(mask.ForSnapshot(snap, e.finding.ResourceID))
	e.mu.Lock()
	e.learned = true
	e.mu.Unlock()
}

// learnFleet collects once when names are masked and no snapshot was read
// yet, so the first request cannot carry a name the vocabulary misses.
func (e *env) learnFleet(ctx context.Context) error {
	e.mu.Lock()
	done := e.masker == nil || e.learned
	e.mu.Unlock()
	if done {
		return nil
	}
	if _, err := e.collect(ctx); err != nil {
		return fmt.Errorf("model.mask_names: names could not be learned: %w", err)
	}
	return nil
}
