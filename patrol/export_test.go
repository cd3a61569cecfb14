package patrol

// Streamed is how rep's run used detection while decoding: "whole",
// "partly", "discarded", or "" when its source does not stream.
func Streamed(rep *Report) string { return rep.streamed }
