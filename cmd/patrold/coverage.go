package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/signals/coverage"
)

// Coverage is `patrold coverage --output json`.
type Coverage struct {
	Sources []string       `json:"sources"`
	Checks  []coverage.Row `json:"checks"`
}

// newCoverageCmd is `patrold coverage`: every check of the rule sets
// operators run beside patrold, with patrold's key and a verdict for the
// configured sources (docs/COVERAGE.md).
func newCoverageCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "coverage",
		Short: "Compare patrold's checks with Zabbix, Checkmk and Prometheus rule sets for the configured sources",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			kinds := sourceKinds(cfg)
			rep := Coverage{Sources: kinds, Checks: coverage.Judge(kinds)}
			if output == "json" {
				return a.printJSON(rep)
			}
			printCoverage(a, rep)
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// sourceKinds are the kinds of the configured sources, sorted, each once.
func sourceKinds(cfg *config.Config) []string {
	if len(cfg.Sources) == 0 {
		return []string{cfg.Source.Kind}
	}
	var kinds []string
	for _, m := range cfg.Sources {
		if !slices.Contains(kinds, m.Kind) {
			kinds = append(kinds, m.Kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

func printCoverage(a *app, rep Coverage) {
	w := a.stdout
	fmt.Fprintf(w, "sources: %s\n\n", strings.Join(rep.Sources, ", "))
	counts := map[string]int{}
	for _, r := range rep.Checks {
		counts[r.Verdict]++
		key := r.Key
		if key == "" {
			key = "-"
		}
		fmt.Fprintf(w, "%-34s  %-20s  %s\n", r.Check, key, r.Verdict)
		for _, rule := range r.Rules {
			fmt.Fprintf(w, "    %s: %s\n", rule.Anchor, rule.Rule)
		}
		if r.Patrold != "" {
			fmt.Fprintf(w, "    patrold: %s\n", r.Patrold)
		}
		if r.Why != "" {
			fmt.Fprintf(w, "    why: %s\n", r.Why)
		}
	}
	fmt.Fprintf(w, "\n%d checks: %d %s, %d %s, %d %s\n", len(rep.Checks), counts[coverage.Covered], coverage.Covered,
		counts[coverage.NotEvaluable], coverage.NotEvaluable, counts[coverage.NotImplemented], coverage.NotImplemented)
}
