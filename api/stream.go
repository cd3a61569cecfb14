package api

import (
	"bufio"
	"encoding/json"
	"net/http"
)

// field is one trailing member of a streamed list body.
type field struct {
	name  string
	value any
}

// streamList writes {"<name>": [item(0), ...], <tail...>} item by item
// through a small buffer, so a page is never encoded into one []byte.
func streamList(w http.ResponseWriter, name string, n int, item func(i int) any, tail ...field) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	key, _ := json.Marshal(name)
	bw.WriteString("{")
	bw.Write(key)
	bw.WriteString(":[")
	for i := 0; i < n; i++ {
		if i > 0 {
			bw.WriteString(",")
		}
		// Encode appends a newline, which is JSON whitespace.
		if err := enc.Encode(item(i)); err != nil {
			return nil // the status is sent; the client sees a truncated body
		}
	}
	bw.WriteString("]")
	for _, f := range tail {
		k, _ := json.Marshal(f.name)
		bw.WriteString(",")
		bw.Write(k)
		bw.WriteString(":")
		if err := enc.Encode(f.value); err != nil {
			return nil
		}
	}
	bw.WriteString("}\n")
	_ = bw.Flush()
	return nil
}
