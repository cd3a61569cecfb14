package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// MaxResultBytes bounds a result file read by Compare.
const MaxResultBytes = 16 << 20

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *p)
}

func spreadText(s *Spread) string {
	if s == nil {
		return "-"
	}
	if s.Min == s.Max {
		return fmt.Sprintf("%.2f", s.Mean)
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Mean, s.Min, s.Max)
}

// WriteText prints a result as `patrold eval` does.
func WriteText(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "model %s/%s  context_tokens %d  scenarios %d  repeat %d\n", r.Provider, r.Model, r.ContextTokens, len(r.Scenarios), r.Repeat)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsignals\theld\tfiled\trecall\tfindings\tprecision\tunsupported\tduplicates\tabove measured\trefused claims\trefused calls\tturns\ttokens in/out\tcached\tcost\twall ms\tlargest request")
	row := func(name string, c Counts, recall, precision string) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%s\t$%.4f\t%d\t%d\n", name, c.Signals, c.Held, c.FiledByModel, recall, c.ModelFindings,
			precision, c.UnsupportedFiled, c.Duplicates, c.AboveMeasurement, c.RefusedClaims, c.RefusedCalls, c.Turns, c.InputTokens, c.OutputTokens,
			pct(ratio(c.LaterCacheReadTokens, c.LaterInputTokens)), c.CostUSD, c.WallMS, c.LargestRequestTokens)
	}
	for _, sc := range r.Scenarios {
		var c Counts
		for _, f := range sc.Runs {
			c.add(f.Counts)
		}
		row(sc.Name, c, spreadText(sc.Recall), spreadText(sc.Precision))
	}
	o := r.Overall
	row("overall", o.Counts, pct(o.Recall), pct(o.Precision))
	if err := tw.Flush(); err != nil {
		return err
	}
	if o.RecallSpread != nil && r.Repeat > 1 {
		fmt.Fprintf(w, "recall over %d repetitions: %s\n", r.Repeat, spreadText(o.RecallSpread))
	}
	if o.PrecisionSpread != nil && r.Repeat > 1 {
		fmt.Fprintf(w, "precision over %d repetitions: %s\n", r.Repeat, spreadText(o.PrecisionSpread))
	}
	if r.Qualification.Passed {
		_, err := fmt.Fprintf(w, "qualified: recall >= %g, precision >= %g, at most %d unsupported findings, within the token budget\n",
			r.Bars.MinRecall, r.Bars.MinPrecision, r.Bars.MaxUnsupported)
		return err
	}
	fmt.Fprintln(w, "NOT qualified:")
	for _, f := range r.Qualification.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
	return nil
}

// ReadResult reads a JSON result written by `patrold eval --output json`.
func ReadResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxResultBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxResultBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxResultBytes)
	}
	var r Result
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not an eval result: %w", path, err)
	}
	if r.Version != ResultVersion {
		return nil, fmt.Errorf("%s: version: %d is not %d", path, r.Version, ResultVersion)
	}
	return &r, nil
}

// Comparison puts two results side by side (`patrold eval compare`).
type Comparison struct {
	A         Side          `json:"a"`
	B         Side          `json:"b"`
	Scenarios []ScenarioRow `json:"scenarios"`
}

// Side is one result's headline.
type Side struct {
	Model     string   `json:"model"`
	Recall    *float64 `json:"recall"`
	Precision *float64 `json:"precision"`
	Unsup     int      `json:"unsupported_filed"`
	Tokens    int      `json:"tokens"`
	CostUSD   float64  `json:"cost_usd"`
	WallMS    int64    `json:"wall_ms"`
	Largest   int      `json:"largest_request_tokens"`
	Qualified bool     `json:"qualified"`
}

// ScenarioRow is one scenario in both results (nil: not in that one).
type ScenarioRow struct {
	Name    string  `json:"name"`
	RecallA *Spread `json:"recall_a"`
	RecallB *Spread `json:"recall_b"`
	InA     bool    `json:"in_a"`
	InB     bool    `json:"in_b"`
}

func side(r *Result) Side {
	o := r.Overall
	return Side{Model: r.Provider + "/" + r.Model, Recall: o.Recall, Precision: o.Precision, Unsup: o.UnsupportedFiled,
		Tokens: o.InputTokens + o.OutputTokens, CostUSD: o.CostUSD, WallMS: o.WallMS, Largest: o.LargestRequestTokens, Qualified: r.Qualification.Passed}
}

// Compare puts a and b side by side, scenarios in a's order then b's.
func Compare(a, b *Result) (*Comparison, error) {
	if a == nil || b == nil {
		return nil, errors.New("compare: two results required")
	}
	c := &Comparison{A: side(a), B: side(b)}
	idx := map[string]int{}
	for _, sc := range a.Scenarios {
		idx[sc.Name] = len(c.Scenarios)
		c.Scenarios = append(c.Scenarios, ScenarioRow{Name: sc.Name, RecallA: sc.Recall, InA: true})
	}
	for _, sc := range b.Scenarios {
		i, ok := idx[sc.Name]
		if !ok {
			i = len(c.Scenarios)
			c.Scenarios = append(c.Scenarios, ScenarioRow{Name: sc.Name})
		}
		c.Scenarios[i].RecallB, c.Scenarios[i].InB = sc.Recall, true
	}
	return c, nil
}

// WriteComparison prints a comparison as text.
func WriteComparison(w io.Writer, c *Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tA %s\tB %s\n", c.A.Model, c.B.Model)
	fmt.Fprintf(tw, "recall\t%s\t%s\n", pct(c.A.Recall), pct(c.B.Recall))
	fmt.Fprintf(tw, "precision\t%s\t%s\n", pct(c.A.Precision), pct(c.B.Precision))
	fmt.Fprintf(tw, "unsupported filed\t%d\t%d\n", c.A.Unsup, c.B.Unsup)
	fmt.Fprintf(tw, "tokens\t%d\t%d\n", c.A.Tokens, c.B.Tokens)
	fmt.Fprintf(tw, "cost\t$%.4f\t$%.4f\n", c.A.CostUSD, c.B.CostUSD)
	fmt.Fprintf(tw, "wall ms\t%d\t%d\n", c.A.WallMS, c.B.WallMS)
	fmt.Fprintf(tw, "largest request\t%d\t%d\n", c.A.Largest, c.B.Largest)
	fmt.Fprintf(tw, "qualified\t%t\t%t\n", c.A.Qualified, c.B.Qualified)
	for _, s := range c.Scenarios {
		a, b := "absent", "absent"
		if s.InA {
			a = spreadText(s.RecallA)
		}
		if s.InB {
			b = spreadText(s.RecallB)
		}
		fmt.Fprintf(tw, "recall %s\t%s\t%s\n", s.Name, a, b)
	}
	return tw.Flush()
}

// ReferenceTable renders results as the reference table of docs/MODELS.md
// (one row per result, in the order given). Tokens are left out: they
// follow every change of prompt wording, the behaviour figures do not.
func ReferenceTable(results []*Result) string {
	var b strings.Builder
	b.WriteString("| model | scenarios | signals | recall | precision | unsupported filed | refused claims | refused calls | turns | qualified |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		o := r.Overall
		q := "yes"
		if !r.Qualification.Passed {
			q = "no"
		}
		fmt.Fprintf(&b, "| `%s` | %d | %d | %s | %s | %d | %d | %d | %d | %s |\n", r.Model, o.Scenarios, o.Signals, pct(o.Recall),
			pct(o.Precision), o.UnsupportedFiled, o.RefusedClaims, o.RefusedCalls, o.Turns, q)
	}
	return b.String()
}
