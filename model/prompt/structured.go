package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// NeutraliseDocument neutralises one untrusted document. A JSON document
// (what every tool returns) is neutralised structurally. Each string
// value and object key is scanned as the raw text it decodes to, before
// any JSON escaping can hide a span from a rule (`<` as \u003c, a line
// break as \n). The document is re-encoded with its key order kept and no
// HTML escaping. Anything else is neutralised as plain text. Each rule
// counts once per document in the metrics.
func (n *Neutraliser) NeutraliseDocument(doc string) Result {
	var counts map[string]int
	if !jsonDocument(doc) {
		// Replacing a span may turn broken JSON into valid JSON (a stray
		// quote inside a fence marker), so the result is scanned again.
		doc, counts = replaceSpans(doc, nil)
		if !jsonDocument(doc) {
			n.count(counts)
			return Result{Text: doc, Counts: counts}
		}
	}
	out, counts, err := neutraliseJSON(strings.TrimSpace(doc), counts)
	if err != nil { // jsonDocument said it decodes; keep the plain scan.
		out, counts = replaceSpans(doc, counts)
	}
	n.count(counts)
	return Result{Text: out, Counts: counts}
}

// jsonDocument reports whether doc is one JSON object, array or string.
func jsonDocument(doc string) bool {
	t := strings.TrimSpace(doc)
	return t != "" && (t[0] == '{' || t[0] == '[' || t[0] == '"') && json.Valid([]byte(t))
}

func neutraliseJSON(doc string, counts map[string]int) (string, map[string]int, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	w := &jsonWriter{counts: counts}
	w.str.enc = json.NewEncoder(&w.str.buf)
	w.str.enc.SetEscapeHTML(false)
	if err := w.value(dec); err != nil {
		return "", nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", nil, fmt.Errorf("trailing data after the document")
	}
	return w.out.String(), w.counts, nil
}

type jsonWriter struct {
	out    strings.Builder
	counts map[string]int
	str    struct {
		buf bytes.Buffer
		enc *json.Encoder
	}
}

func (w *jsonWriter) value(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closing := byte('}')
		if t == '[' {
			closing = ']'
		}
		w.out.WriteByte(byte(t))
		for first := true; dec.More(); first = false {
			if !first {
				w.out.WriteByte(',')
			}
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				if err := w.text(key.(string)); err != nil {
					return err
				}
				w.out.WriteByte(':')
			}
			if err := w.value(dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		w.out.WriteByte(closing)
	case string:
		return w.text(t)
	case json.Number:
		w.out.WriteString(t.String())
	case bool:
		if t {
			w.out.WriteString("true")
		} else {
			w.out.WriteString("false")
		}
	case nil:
		w.out.WriteString("null")
	}
	return nil
}

// text neutralises one raw string and writes it JSON-encoded.
func (w *jsonWriter) text(s string) error {
	s, w.counts = replaceSpans(s, w.counts)
	w.str.buf.Reset()
	if err := w.str.enc.Encode(s); err != nil {
		return err
	}
	w.out.Write(bytes.TrimSuffix(w.str.buf.Bytes(), []byte("\n")))
	return nil
}
