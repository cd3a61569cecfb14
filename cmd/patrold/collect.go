package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/snapshot"
)

// newSnapshotCollectCmd: collect once from the configured source and print
// the snapshot, so an operator sees what the daemon sees. The store is not
// touched and the prober does not run.
func newSnapshotCollectCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Collect a snapshot from the configured source and print it (no patrol, no probing)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			defer root.Close()
			src, err := root.Source()
			if err != nil {
				return cliErr(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), cfg.Schedule.RunTimeout)
			defer cancel()
			snap, problems, err := src.Collect(ctx)
			if err != nil {
				return err
			}
			if output == "json" {
				data, err := snapshot.Encode(snap)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintln(a.stdout, string(data)); err != nil {
					return err
				}
				printProblems(a.stderr, problems)
				return nil
			}
			printSnapshot(a.stdout, snap)
			printProblems(a.stdout, problems)
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// printProblems lists what the source reported: partial failures of the
// source, dropped resources and warnings.
func printProblems(w io.Writer, problems []snapshot.Problem) {
	for _, p := range problems {
		switch {
		case p.Warning:
			fmt.Fprintf(w, "warning: %s\n", p)
		case p.SourceLevel():
			fmt.Fprintf(w, "incomplete: %s: %s\n", p.Field, p.Problem)
		default:
			fmt.Fprintf(w, "invalid (dropped): %s\n", p)
		}
	}
}

func printSnapshot(w io.Writer, snap *snapshot.Snapshot) {
	var kinds []string
	counts := snap.Counts()
	for _, k := range snapshot.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, counts[k]))
	}
	fmt.Fprintf(w, "snapshot: source %s, taken_at %s, %d resources (%s)\n", orNone(snap.Source),
		snap.TakenAt.Format(time.RFC3339), len(snap.Resources), strings.Join(kinds, ", "))
	for i := range snap.Resources {
		r := &snap.Resources[i]
		fields := []string{fmt.Sprintf("%-28s", r.ID), fmt.Sprintf("%-8s", orDash(r.Status))}
		if r.Name != "" && !strings.HasSuffix(r.ID, "/"+r.Name) {
			fields = append(fields, strconv.Quote(r.Name))
		}
		for n, v := range r.Metrics.All() { // in name order
			fields = append(fields, fmt.Sprintf("%s=%g", n, v))
		}
		if s := r.Smart; s != nil {
			fields = append(fields, fmt.Sprintf("smart=%s reallocated=%d pending=%d uncorrectable=%d crc=%d media=%d",
				orDash(s.Health), s.ReallocatedSectors, s.PendingSectors, s.OfflineUncorrectable, s.UDMACRCErrors, s.MediaErrors))
		}
		if b := r.Backup; b != nil {
			last := "never"
			if b.LastSuccessAt != nil {
				last = b.LastSuccessAt.Format(time.RFC3339)
			}
			fields = append(fields, fmt.Sprintf("backup=%s last_success=%s", orDash(b.LastStatus), last))
		}
		if len(r.Addresses) > 0 {
			fields = append(fields, "addresses="+strings.Join(r.Addresses, ","))
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(fields, " "), " "))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
