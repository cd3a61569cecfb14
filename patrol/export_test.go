package patrol

// Streamed is how rep's run used detection while decoding: "whole",
// "partly", "discarded", or "" when its source does not stream.
func Streamed(rep *Report) string { return rep.streamed }

// Waiting is how many admissions queue behind a finishing run.
func (r *Runner) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}
