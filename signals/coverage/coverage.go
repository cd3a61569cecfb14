// Package coverage compares patrold's checks with the rule sets Proxmox
// operators already run (docs/COVERAGE.md). The list is data: each check
// names the anchors' rules, patrold's key and the sources that read its
// data. The verdict for a configuration is derived from the catalogue, so
// a key that lands turns its row to covered without editing the list.
package coverage

import (
	"fmt"
	"slices"
	"strings"

	"github.com/patrold/patrold/signals"
)

// The anchors: rule sets operators run beside patrold.
const (
	Zabbix        = "Zabbix Proxmox VE by HTTP"
	Checkmk       = "Checkmk proxmox_ve"
	APAPVE        = "awesome-prometheus-alerts pve-exporter"
	APANode       = "awesome-prometheus-alerts node_exporter"
	APASmart      = "awesome-prometheus-alerts smartctl"
	APAZFS        = "awesome-prometheus-alerts zfs_exporter"
	PulseRequests = "Pulse (users' requests)"
)

// Anchors lists the anchors in the order reports show them.
var Anchors = []string{Zabbix, Checkmk, APAPVE, APANode, APASmart, APAZFS, PulseRequests}

// Verdicts.
const (
	Covered        = "covered"
	NotEvaluable   = "not evaluable"
	NotImplemented = "not implemented"
)

// Rule is one anchor's rule for a check, with its threshold.
type Rule struct {
	Anchor string `json:"anchor"`
	Rule   string `json:"rule"`
}

// Check is one row of the union list.
type Check struct {
	// Name says what is checked, in an operator's words.
	Name string
	// Rules are the anchors' rules; none for a check only patrold makes.
	Rules []Rule
	// Key is patrold's finding key; empty when patrold has none.
	Key string
	// Own marks a key patrold files about itself rather than a catalogue
	// detector (source_failing).
	Own bool
	// Patrold is patrold's rule and default threshold.
	Patrold func() string
	// Data names what the check needs, for a not-evaluable verdict.
	Data string
	// Reads are the source kinds that read Data. The file and exec
	// sources carry any field of the snapshot document and read all.
	Reads []string
}

// documentSources read every field: the snapshot document has them all.
var documentSources = []string{"file", "exec"}

// Row is a check judged for one configuration.
type Row struct {
	Check   string `json:"check"`
	Rules   []Rule `json:"anchors"`
	Key     string `json:"key,omitempty"`
	Patrold string `json:"patrold,omitempty"`
	Verdict string `json:"verdict"`
	Why     string `json:"why,omitempty"`
}

// Judge gives every check its verdict for the configured source kinds.
//   - not implemented: patrold has no key for it, or the key is not in
//     the catalogue yet;
//   - not evaluable: no configured source reads its data;
//   - covered: otherwise.
func Judge(kinds []string) []Row { return judge(checks, kinds, inCatalogue) }

// inCatalogue reports whether a detector files key.
func inCatalogue(key string) bool {
	_, ok := signals.Lookup(key)
	return ok
}

func judge(list []Check, kinds []string, detected func(string) bool) []Row {
	rows := make([]Row, 0, len(list))
	for _, c := range list {
		r := Row{Check: c.Name, Rules: slices.Clone(c.Rules), Key: c.Key}
		if c.Patrold != nil {
			r.Patrold = c.Patrold()
		}
		switch {
		//mutate:coverage-not-implemented ./signals/coverage ^TestJudge
		case !c.implemented(detected):
			r.Verdict, r.Why = NotImplemented, "patrold has no detector for it"
			if c.Key != "" {
				r.Why = "no detector files " + c.Key + " yet"
			}
		//mutate:coverage-not-evaluable ./signals/coverage ^TestJudge
		case !c.readBy(kinds):
			r.Verdict = NotEvaluable
			r.Why = fmt.Sprintf("no configured source (%s) reads %s; read by %s", strings.Join(kinds, ", "), c.Data, strings.Join(c.Reads, ", "))
		default:
			r.Verdict = Covered
		}
		rows = append(rows, r)
	}
	return rows
}

func (c Check) implemented(detected func(string) bool) bool {
	return c.Key != "" && (c.Own || detected(c.Key))
}

func (c Check) readBy(kinds []string) bool {
	for _, k := range kinds {
		if slices.Contains(c.Reads, k) || slices.Contains(documentSources, k) {
			return true
		}
	}
	return false
}

// Checks returns the union list, in report order.
func Checks() []Check { return slices.Clone(checks) }

func pct(v float64) string { return fmt.Sprintf("%g %%", v) }

// fixed is patrold's rule for a key whose threshold is not a setting.
func fixed(s string) func() string { return func() string { return s } }
