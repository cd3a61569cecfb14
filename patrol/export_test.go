package patrol

// Waiting is how many admissions queue behind a finishing run.
func (r *Runner) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}
