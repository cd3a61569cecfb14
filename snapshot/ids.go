package snapshot

// DropUnfitIDs removes from snap every resource whose id or parent
// IDProblem refuses, or whose parents ParentsProblem refuses, and
// returns problems with one Problem for each, naming the field, as
// Decode reports them. A source that builds its resources
// itself (not through Decode) has them checked this way before a run uses
// them. A snapshot with no unfit id is left as it is.
func DropUnfitIDs(snap *Snapshot, problems []Problem) []Problem {
	bad := -1
	for i := range snap.Resources {
		r := &snap.Resources[i]
		if _, prob := ParentsProblem(r.ID, r.Parents); prob != "" || IDProblem(r.ID) != "" || IDProblem(r.Parent) != "" {
			bad = i
			break
		}
	}
	if bad < 0 {
		return problems
	}
	kept := make([]Resource, 0, len(snap.Resources)-1)
	kept = append(kept, snap.Resources[:bad]...)
	for i := bad; i < len(snap.Resources); i++ {
		r := &snap.Resources[i]
		field, prob := "id", IDProblem(r.ID)
		if prob == "" {
			field, prob = "parent", IDProblem(r.Parent)
		}
		if prob == "" {
			field, prob = ParentsProblem(r.ID, r.Parents)
		}
		if prob == "" {
			kept = append(kept, *r)
			continue
		}
		problems = append(problems, Problem{ID: ProblemID(r.ID), Index: i, Field: field, Problem: prob})
	}
	snap.Resources = kept
	return problems
}
