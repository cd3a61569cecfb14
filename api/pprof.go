package api

import (
	"net/http"
	"net/http/pprof"
)

// pprof serves the runtime profiles (Options.Pprof, admin tokens only):
// /debug/pprof/ is the index, /debug/pprof/{profile|trace|cmdline|symbol}
// the special handlers, any other name a named profile (heap, goroutine,
// allocs, ...).
func (a *API) pprof(w http.ResponseWriter, r *http.Request, c *call) error {
	name := r.PathValue("name")
	c.target = name
	switch name {
	case "":
		pprof.Index(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Handler(name).ServeHTTP(w, r)
	}
	return nil
}
