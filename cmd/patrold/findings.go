package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/termsafe"
)

func newFindingsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "findings", Short: "List, show and act on findings",
		Example: "  patrold findings list --severity critical\n" +
			"  patrold findings show 0123456789abcdef\n" +
			"  patrold findings dismiss 0123456789abcdef --reason expected_behavior"}
	var state, severity, output string
	var fpage findings.Page
	list := &cobra.Command{
		Use:   "list",
		Short: "List findings (active by default; --state all for every state)",
		Example: "  patrold findings list\n" +
			"  patrold findings list --state all --severity warning --output json",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			filter := findings.ListFilter{Status: state, Severity: findings.Severity(severity)}
			// The store's and the API's own check: the same message either way.
			if err := filter.Validate(); err != nil {
				return usage(err)
			}
			if err := checkPage("findings", fpage); err != nil {
				return err
			}
			be, err := a.backend(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer be.Close()
			list, next, err := be.List(cmd.Context(), filter, fpage)
			if err != nil {
				return err
			}
			defer a.nextPage(next)
			if output == "json" {
				return a.printPage(cmd, "findings", withStates(list), len(list), next)
			}
			printFindings(a.stdout, list)
			return nil
		},
	}
	list.Flags().StringVar(&state, "state", "", "active (default), resolved or all")
	list.Flags().StringVar(&severity, "severity", "", "only this severity")
	pageFlags(list, &fpage, findings.DefaultPageLimit)
	outputFlag(list, &output)
	var showOutput string
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one finding and its history",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(showOutput); err != nil {
				return err
			}
			if err := checkID("finding", argv[0]); err != nil {
				return err
			}
			be, err := a.backend(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer be.Close()
			f, events, err := be.Show(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if showOutput == "json" {
				return a.printJSON(map[string]any{"finding": api.NewFindingView(f, time.Now()), "events": events})
			}
			printFinding(a.stdout, &f, events)
			return nil
		},
	}
	outputFlag(show, &showOutput)
	cmd.AddCommand(list, show)
	cmd.AddCommand(actionCmds(a)...)
	return cmd
}

func withStates(list []findings.Finding) []api.FindingView {
	now := time.Now()
	out := make([]api.FindingView, 0, len(list))
	for _, f := range list {
		out = append(out, api.NewFindingView(f, now))
	}
	return out
}

func printFindings(w io.Writer, list []findings.Finding) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no findings")
		return
	}
	fmt.Fprintf(w, "%-16s  %-8s  %-19s  %-5s  %-17s  %-30s  %s\n", "ID", "SEVERITY", "STATE", "ACKED", "KEY", "RESOURCE", "TITLE")
	now := time.Now()
	for i := range list {
		f := &list[i]
		acked := "-"
		if f.AcknowledgedAt != nil {
			acked = "yes"
		}
		fmt.Fprintf(w, "%-16s  %-8s  %-19s  %-5s  %-17s  %-30s  %s\n", termsafe.Field(f.ID), termsafe.Field(string(f.Severity)), findings.LoopStateAt(f, now),
			acked, termsafe.Field(f.Key), termsafe.Field(f.ResourceID), termsafe.Field(f.Title))
	}
}

func printFinding(w io.Writer, f *findings.Finding, events []findings.Event) {
	fmt.Fprintf(w, "%s  %s\n", termsafe.Field(f.ID), termsafe.Field(f.Title))
	rows := [][2]string{
		{"resource", f.ResourceID}, {"key", f.Key}, {"category", string(f.Category)}, {"severity", string(f.Severity)},
		{"state", findings.LoopStateAt(f, time.Now())}, {"source", string(f.Source)},
		{"detected", f.DetectedAt.Format(time.RFC3339)}, {"last seen", f.LastSeenAt.Format(time.RFC3339)},
		{"times raised", fmt.Sprint(f.TimesRaised)}, {"regressions", fmt.Sprint(f.RegressionCount)},
		{"description", f.Description}, {"recommendation", f.Recommendation}, {"evidence", f.Evidence},
	}
	if f.AcknowledgedAt != nil {
		rows = append(rows, [2]string{"acknowledged", f.AcknowledgedAt.Format(time.RFC3339)})
	}
	if f.ResolvedAt != nil {
		rows = append(rows, [2]string{"resolved", f.ResolvedAt.Format(time.RFC3339) + " (" + f.ResolveReason + ")"})
	}
	if f.ResolveNote != "" {
		rows = append(rows, [2]string{"note", f.ResolveNote})
	}
	if f.InhibitedBy != "" {
		rows = append(rows, [2]string{"inhibited by", f.InhibitedBy + " (held: not published or investigated while it is active)"})
	}
	if len(f.Explains) > 0 {
		rows = append(rows, [2]string{"explains", fmt.Sprintf("%d: %s", len(f.Explains), strings.Join(f.Explains, ", "))})
	}
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(w, "  %-15s %s\n", r[0]+":", termsafe.Field(r[1]))
		}
	}
	if len(events) > 0 {
		fmt.Fprintln(w, "  history:")
	}
	for _, e := range events {
		fmt.Fprintf(w, "    %s  %-16s %s\n", e.At.Format(time.RFC3339), termsafe.Field(e.Kind), termsafe.Field(strings.TrimSpace(e.Detail)))
	}
}

func newRunsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "Run history"}
	var output string
	var rpage findings.Page
	list := &cobra.Command{
		Use:   "list",
		Short: "List recent runs",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := checkPage("runs", rpage); err != nil {
				return err
			}
			be, err := a.backend(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer be.Close()
			runs, next, err := be.Runs(cmd.Context(), rpage)
			if err != nil {
				return err
			}
			defer a.nextPage(next)
			if output == "json" {
				if runs == nil {
					runs = []findings.RunRecord{}
				}
				return a.printPage(cmd, "runs", runs, len(runs), next)
			}
			fmt.Fprintf(a.stdout, "%-26s  %-9s  %-12s  %-13s  %-20s  %8s  %s\n", "RUN", "TRIGGER", "STATUS", "ANALYSIS", "STARTED", "MS", "FINDINGS")
			for _, r := range runs {
				ms, n := "-", "-"
				if r.Summary != nil {
					ms, n = fmt.Sprint(r.Summary.DurationMS), fmt.Sprint(r.Summary.Findings)
				}
				fmt.Fprintf(a.stdout, "%-26s  %-9s  %-12s  %-13s  %-20s  %8s  %s\n", r.ID, r.Trigger, r.Status, r.Analysis, r.StartedAt.Format(time.RFC3339), ms, n)
			}
			return nil
		},
	}
	outputFlag(list, &output)
	pageFlags(list, &rpage, 20)
	var showOutput string
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one run's report",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(showOutput); err != nil {
				return err
			}
			if err := checkID("run", argv[0]); err != nil {
				return err
			}
			be, err := a.backend(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer be.Close()
			report, err := be.Run(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if showOutput == "json" {
				_, err = a.stdout.Write(append(indentJSON(report), '\n'))
				return err
			}
			return printStoredReport(a.stdout, report)
		},
	}
	outputFlag(show, &showOutput)
	cmd.AddCommand(list, show)
	return cmd
}
