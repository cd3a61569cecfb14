package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// pageFlags adds --limit and --cursor to a list command.
func pageFlags(cmd *cobra.Command, p *findings.Page, def int) {
	cmd.Flags().IntVar(&p.Limit, "limit", def, fmt.Sprintf("at most this many rows (1..%d)", findings.MaxPageLimit))
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "continue after the page that printed this cursor")
	cmd.Flags().Bool("envelope", false, "with --output json, print the API's list body (rows, count, next_cursor) instead of a bare array")
}

// printPage prints one page of a list as JSON: the bare array, or with
// --envelope the API's list body {key: rows, count, next_cursor}.
func (a *app) printPage(cmd *cobra.Command, key string, rows any, count int, next string) error {
	if env, _ := cmd.Flags().GetBool("envelope"); env {
		return a.printJSON(map[string]any{key: rows, "count": count, "next_cursor": next})
	}
	return a.printJSON(rows)
}

// checkPage validates --limit and --cursor with the store's own check
// (an explicit --limit 0 is refused, as limit=0 is by the API).
func checkPage(kind string, p findings.Page) error {
	if p.Limit == 0 {
		return usage(&findings.InputError{Field: "limit", Problem: fmt.Sprintf("0 is not an integer in 1..%d", findings.MaxPageLimit)})
	}
	if err := findings.ValidatePage(kind, p); err != nil {
		return usage(err)
	}
	return nil
}

// nextPage tells the operator, on stderr so stdout stays one document,
// how to read the next page.
func (a *app) nextPage(next string) {
	if next != "" {
		fmt.Fprintf(a.stderr, "more rows: repeat with --cursor %s\n", next)
	}
}

// printStoredReport prints a stored run report as `patrold run --all`
// does; a run still in progress (its record, not a report) is printed as
// such.
func printStoredReport(w io.Writer, raw json.RawMessage) error {
	var rep patrol.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("stored run report: %w", err)
	}
	if rep.Resources == nil {
		var rec findings.RunRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("stored run record: %w", err)
		}
		_, err := fmt.Fprintf(w, "run %s  trigger=%s  status=%s  started %s (no report yet)\n", rec.ID, rec.Trigger, rec.Status, rec.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
		return err
	}
	printReport(w, &rep, true)
	return nil
}

// requireSubcommands makes every command group (and the root) fail with
// exit 2 on an unknown or missing subcommand instead of printing help and
// exiting 0. Cobra's own check covers only the root, with exit 1.
func requireSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		requireSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, argv []string) error {
		if len(argv) > 0 {
			return usage(fmt.Errorf("unknown command %q for %q (see %s --help)", argv[0], cmd.CommandPath(), cmd.CommandPath()))
		}
		return usage(fmt.Errorf("%s needs a subcommand (see %s --help)", cmd.CommandPath(), cmd.CommandPath()))
	}
}
