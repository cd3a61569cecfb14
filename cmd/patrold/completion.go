package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
)

// completeIDLimit bounds the finding ids a completion offers.
const completeIDLimit = 200

// completeFindingIDs offers the ids of the local database's findings,
// active first, newest first, each described by its status, resource and title. It
// opens the file read-only: a completion must never create, migrate or
// lock the database a daemon writes.
func completeFindingIDs(a *app) cobra.CompletionFunc {
	return func(cmd *cobra.Command, argv []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(argv) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, _, err := config.LoadFile(a.configPath)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, err := findingIDs(cmd.Context(), filepath.Join(cfg.DataDir, daemon.DBFile), toComplete)
		if err != nil {
			cobra.CompDebugln("finding ids: "+err.Error(), false)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

func findingIDs(ctx context.Context, path, prefix string) ([]cobra.Completion, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := os.Stat(path); err != nil {
		return nil, err // mode=ro never creates it; say why in the debug log
	}
	briefs, err := store.RecentFindings(ctx, path, prefix, completeIDLimit)
	if err != nil {
		return nil, err
	}
	var out []cobra.Completion
	for _, b := range briefs {
		if contracts.ValidFindingID(b.ID) {
			out = append(out, cobra.CompletionWithDesc(b.ID, oneLine(b.Status+" "+b.ResourceID+": "+b.Title)))
		}
	}
	return out, nil
}

// oneLine keeps a description on its line: a tab or newline from a
// source's title would split the completion protocol's line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// completeValues offers values, each a string from one of the code's
// own tables.
func completeValues[T ~string](values []T) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		out := make([]cobra.Completion, 0, len(values))
		for _, v := range values {
			out = append(out, string(v))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// resourceKinds are the kinds a silence may match: every kind a report
// counts, and the cluster (snapshot.Kind.Valid accepts exactly these).
func resourceKinds() []snapshot.Kind {
	return append(slices.Clone(snapshot.Kinds), snapshot.KindCluster)
}

// registerCompletions adds value completion to the flags and arguments
// that take a fixed or recorded value.
func registerCompletions(a *app, root *cobra.Command) {
	walkCommands(root, func(cmd *cobra.Command) {
		path := strings.TrimPrefix(cmd.CommandPath(), "patrold ")
		switch {
		case path == "findings show" || isActionCmd(path):
			cmd.ValidArgsFunction = completeFindingIDs(a)
		}
		for flag, fn := range map[string]cobra.CompletionFunc{
			"findings list --state":     completeValues(findings.ListStates),
			"findings list --severity":  completeValues(contracts.Severities),
			"findings dismiss --reason": completeValues(findings.DismissReasons),
			"silences create --kind":    completeValues(resourceKinds()),
		} {
			cmdPath, name, _ := strings.Cut(flag, " --")
			if cmdPath == path {
				_ = cmd.RegisterFlagCompletionFunc(name, fn)
			}
		}
	})
}

func isActionCmd(path string) bool {
	for _, act := range findings.Actions {
		if path == "findings "+string(act) {
			return true
		}
	}
	return false
}

func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, fn)
	}
}
