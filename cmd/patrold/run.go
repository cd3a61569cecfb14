package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/internal/termsafe"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/store"
)

func newRunCmd(a *app) *cobra.Command {
	var snapPath, output, replay, reason string
	var doProbe, all, dryRun bool
	var resources []string
	cmd := &cobra.Command{
		Use: "run",
		Example: "  patrold run --config /etc/patrold/patrold.yaml\n" +
			"  patrold run --snapshot examples/small-faults.json --dry-run\n" +
			"  patrold run --snapshot snapshot.json --output json",
		Short: "Run one patrol now and print the run report",
		Long: "Run one patrol now and print the run report.\n\n" +
			"For a very large snapshot file, GOGC=400 in the environment makes the\n" +
			"run collect its garbage less often: less CPU for a higher peak.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if err := patrol.CheckScope(resources, reason); err != nil {
				return usage(fmt.Errorf("--resource/--reason: %w", err))
			}
			if reason != "" && len(resources) == 0 {
				return usage(errors.New("--reason: only with --resource (a scoped run)"))
			}
			var ro patrol.RunOptions
			if snapPath != "" {
				// Decode before the store is opened: a rejected document
				// leaves the store exactly as it was.
				snap, probs, err := file.LoadLimited(snapPath, cfg.Source.File.MaxBytes)
				if err != nil {
					if errors.Is(err, snapshot.ErrInvalidDocument) {
						return usage(err)
					}
					return usage(fmt.Errorf("--snapshot: %w", err))
				}
				ro = patrol.RunOptions{Snapshot: snap, Problems: probs, Probe: doProbe}
			}
			ro.Scope, ro.Reason = resources, reason
			var rp daemon.Replay
			if replay != "" {
				rp = func(st *store.Store) (model.Provider, error) { return replayProvider(cmd, st, replay) }
			}
			//mutate:run-dry-run-copy ./cmd/patrold ^TestRunDryRun
			if dryRun {
				rep, runErr := a.dryRun(cmd.Context(), cfg, ro, rp)
				runErr = cliErr(runErr)
				if rep != nil {
					if err := a.printRun(rep, output, all); err != nil {
						return err
					}
				}
				return runErr
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			defer root.Close()
			// One run lock: beside a live daemon the run is the daemon's.
			var held *dirlock.HeldError
			if err := root.Lock("run", ""); errors.As(err, &held) {
				if snapPath != "" || replay != "" {
					return fmt.Errorf("%w; --snapshot and --replay run only without a daemon (stop it, or use a copy of data_dir)", err)
				}
				rep, err := runThroughDaemon(cmd.Context(), cfg, held, resources, reason)
				if err != nil {
					return err
				}
				return a.printRun(rep, output, all)
			} else if err != nil {
				return err
			}
			if ro.Snapshot != nil && len(ro.Scope) == 0 {
				st, err := root.Store(cmd.Context())
				if err != nil {
					return err
				}
				if err := warnForeignFindings(cmd.Context(), a.stderr, cfg, st, ro.Snapshot); err != nil {
					return err
				}
			}
			rep, runErr := root.RunOnce(cmd.Context(), ro, rp)
			runErr = cliErr(runErr)
			if rep != nil {
				if err := a.printRun(rep, output, all); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	cmd.Flags().StringVar(&snapPath, "snapshot", "", "patrol this snapshot file instead of the configured source")
	cmd.Flags().StringVar(&replay, "replay", "", "re-execute the model stages against the recorded exchange of run ID (use with the same --snapshot)")
	cmd.Flags().BoolVar(&doProbe, "probe", false, "with --snapshot: also probe guest addresses (off: the run is reproducible)")
	cmd.Flags().StringArrayVar(&resources, "resource", nil, "a scoped run: patrol only this resource (repeatable), its parents and children, and resolve nothing else")
	cmd.Flags().StringVar(&reason, "reason", "", "with --resource: why the scoped run was asked for (recorded in the report)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, dryRunHelp)
	cmd.Flags().BoolVar(&all, "all", false, "text output: list every finding, the unchanged ones too (default: their counts)")
	outputFlag(cmd, &output)
	return cmd
}

// printRun prints a run report; as text, the unchanged findings are
// counted, not listed, unless all.
func (a *app) printRun(rep *patrol.Report, output string, all bool) error {
	if output == "json" {
		// What printJSON prints, through the report's own encoder (a
		// steady run's report is about 10 MB at 100k resources).
		data, err := patrol.MarshalReport(rep)
		if err != nil {
			return err
		}
		out := appendIndented(make([]byte, 0, len(data)+len(data)/2), data)
		_, err = a.stdout.Write(append(out, '\n'))
		return err
	}
	w := bufio.NewWriter(a.stdout)
	printReport(w, rep, all)
	return w.Flush()
}

// runPoll is how often `run` through a daemon asks whether its run ended.
// runAppear bounds the wait for its record to be written.
const (
	runPoll   = 200 * time.Millisecond
	runAppear = 30 * time.Second
)

// runThroughDaemon asks the daemon holding data_dir to run a patrol (its
// run lock: a run in progress is refused, never overlapped), waits for the
// run to end and returns its report.
func runThroughDaemon(ctx context.Context, cfg *config.Config, held *dirlock.HeldError, scope []string, reason string) (*patrol.Report, error) {
	addr := cfg.HTTP.Listen
	if held.Holder != nil && held.Holder.API != "" {
		addr = held.Holder.API
	}
	token, ok := pickToken(cfg, true)
	if !ok {
		return nil, fmt.Errorf("%w; the run goes through its API, which needs an admin token in http.tokens", held)
	}
	c, err := api.NewClient("http://"+addr, token, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	var id string
	if len(scope) > 0 {
		id, err = c.TriggerScopedRun(ctx, scope, reason)
	} else {
		id, err = c.TriggerRun(ctx)
	}
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodePatrolAlreadyRunning {
		return nil, fmt.Errorf("the daemon holding %s is running %s; not started (runs never overlap)", cfg.DataDir, ae.CurrentRunID)
	}
	if err != nil {
		return nil, fmt.Errorf("%w; asking its API at %s to run: %w", held, addr, err)
	}
	appear := time.Now().Add(runAppear)
	for {
		raw, err := c.Run(ctx, id)
		// The run is admitted before its record is written: not found
		// for a moment.
		if errors.As(err, &ae) && ae.Code == api.CodeNotFound && time.Now().Before(appear) {
			if err := sleepCtx(ctx, runPoll); err != nil {
				return nil, fmt.Errorf("run %s: %w", id, err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		// While running the daemon answers the run record, without
		// finished_at; then the report.
		var probe struct {
			Status     string     `json:"status"`
			FinishedAt *time.Time `json:"finished_at"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		if probe.FinishedAt != nil && probe.Status != "running" {
			var rep patrol.Report
			if err := json.Unmarshal(raw, &rep); err != nil {
				return nil, fmt.Errorf("run %s: report: %w", id, err)
			}
			if rep.Status == patrol.StatusError {
				return &rep, fmt.Errorf("run %s ended with status error", id)
			}
			return &rep, nil
		}
		if err := sleepCtx(ctx, runPoll); err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// printReport prints a run report as text. Every finding the run changed
// is listed; the unchanged ones (most of a steady run's) are listed too
// when all, else counted by severity and by category.
func printReport(w io.Writer, rep *patrol.Report, all bool) {
	reasons := ""
	if len(rep.StatusReasons) > 0 {
		reasons = " (" + strings.Join(rep.StatusReasons, ", ") + ")"
	}
	model := ""
	if rep.Model != nil {
		model = "  model=" + rep.Model.Provider + "/" + rep.Model.Model
	}
	fmt.Fprintf(w, "run %s  trigger=%s  status=%s%s  analysis=%s%s  %dms\n", rep.RunID, rep.Trigger, rep.Status, reasons, rep.Analysis, model, rep.DurationMS)
	var kinds []string
	for _, k := range snapshot.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, rep.Resources[string(k)]))
	}
	fmt.Fprintf(w, "resources: %s\n", strings.Join(kinds, ", "))
	if sc := rep.Scope; sc != nil {
		fmt.Fprintf(w, "scope: %s (%d patrolled)", termsafe.Field(strings.Join(sc.Resources, ", ")), sc.Patrolled)
		if sc.Reason != "" {
			fmt.Fprintf(w, "  reason: %s", termsafe.Field(sc.Reason))
		}
		fmt.Fprintln(w)
	}
	for _, p := range rep.InvalidResources {
		fmt.Fprintf(w, "invalid: %s\n", termsafe.Field(p.String()))
	}
	// Without a model nothing was matched: the count alone says it.
	if rep.Analysis == patrol.AnalysisModel || rep.Model != nil {
		fmt.Fprintf(w, "signals: %d (unmatched by the model: %d)\n", len(rep.Signals), len(rep.UnmatchedSignals))
	} else {
		fmt.Fprintf(w, "signals: %d\n", len(rep.Signals))
	}
	header := false
	var unchanged []patrol.FindingRef
	for _, f := range rep.Findings {
		if f.Change == findings.ChangeUnchanged && !all {
			unchanged = append(unchanged, f)
			continue
		}
		if !header {
			fmt.Fprintln(w, "findings:")
			header = true
		}
		fmt.Fprintf(w, "  %-9s %-8s %-16s %-17s %-30s %s\n", strings.ToUpper(string(f.Change)), f.Severity, f.ID,
			termsafe.Field(f.Key), termsafe.Field(f.ResourceID), termsafe.Field(f.Title))
	}
	if len(unchanged) > 0 {
		fmt.Fprintf(w, "unchanged: %d (--all lists them)\n", len(unchanged))
		fmt.Fprintf(w, "  by severity: %s\n", countBy(unchanged, func(f patrol.FindingRef) string { return string(f.Severity) }))
		fmt.Fprintf(w, "  by category: %s\n", countBy(unchanged, func(f patrol.FindingRef) string { return string(f.Category) }))
	}
	fmt.Fprintf(w, "resolved: %d\n", len(rep.Resolved))
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", termsafe.Field(e))
	}
}

// countBy counts refs by the value of key: "a 2, b 1", most first, then by
// value.
func countBy(refs []patrol.FindingRef, key func(patrol.FindingRef) string) string {
	n := map[string]int{}
	for _, f := range refs {
		n[key(f)]++
	}
	vals := slices.Collect(maps.Keys(n))
	slices.SortFunc(vals, func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprintf("%s %d", termsafe.Field(v), n[v])
	}
	return strings.Join(parts, ", ")
}

func newSnapshotCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot", Short: "Snapshot document commands"}
	var strict bool
	var output string
	validate := &cobra.Command{
		Use:   "validate FILE",
		Short: "Decode and validate a snapshot, print counts and problems",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			snap, probs, err := file.Read(argv[0], snapshot.DecodeOptions{Strict: strict})
			if err != nil {
				return usage(err)
			}
			invalid := 0
			for _, p := range probs {
				if !p.Warning {
					invalid++
				}
			}
			if output == "json" {
				counts := map[string]int{}
				for _, k := range snapshot.Kinds {
					counts[string(k)] = snap.Counts()[k]
				}
				if probs == nil {
					probs = []snapshot.Problem{}
				}
				if err := a.printJSON(ValidateResult{Version: snap.Version, TakenAt: snap.TakenAt, Valid: len(snap.Resources), Resources: counts, Problems: probs}); err != nil {
					return err
				}
				if invalid > 0 {
					return usage(fmt.Errorf("%d invalid resources", invalid))
				}
				return nil
			}
			var kinds []string
			for _, k := range snapshot.Kinds {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, snap.Counts()[k]))
			}
			fmt.Fprintf(a.stdout, "snapshot: version %d, taken_at %s, %d valid resources (%s)\n",
				snap.Version, snap.TakenAt.Format(time.RFC3339), len(snap.Resources), strings.Join(kinds, ", "))
			for _, p := range probs {
				label := "invalid (dropped)"
				if p.Warning {
					label = "warning"
				}
				fmt.Fprintf(a.stdout, "%s: %s\n", label, p)
			}
			if invalid > 0 {
				return usage(fmt.Errorf("%d invalid resources", invalid))
			}
			return nil
		},
	}
	validate.Flags().BoolVar(&strict, "strict", false, "also report unknown fields and unrecognised values")
	outputFlag(validate, &output)
	cmd.AddCommand(validate, newSnapshotCollectCmd(a))
	return cmd
}

func newDemoCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "demo", Short: "Demo fleet commands"}
	o := demo.Options{Seed: demo.DefaultSeed, Resources: demo.DefaultResources, FaultRate: demo.DefaultFaultRate, ChangeEvery: demo.DefaultChangeEvery}
	var at, output string
	export := &cobra.Command{
		Use:   "export",
		Short: "Print a generated fleet snapshot (a JSON document in either output format)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return usage(err)
			}
			when := time.Now()
			if at != "" {
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return usage(fmt.Errorf("--at: %w", err))
				}
				when = t
			}
			data, err := snapshot.Encode(demo.Generate(o, when))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, string(data))
			return err
		},
	}
	export.Flags().IntVar(&o.Resources, "resources", o.Resources, "number of resources")
	export.Flags().Float64Var(&o.FaultRate, "fault-rate", o.FaultRate, "probability of each fault (0..1)")
	export.Flags().Uint64Var(&o.Seed, "seed", o.Seed, "random seed")
	export.Flags().StringVar(&at, "at", "", "generate the fleet as at this RFC 3339 time (default now)")
	outputFlag(export, &output)
	cmd.AddCommand(export)
	return cmd
}

// ValidateResult is `patrold snapshot validate --output json`.
type ValidateResult struct {
	Version   int                `json:"version"`
	TakenAt   time.Time          `json:"taken_at"`
	Valid     int                `json:"valid_resources"`
	Resources map[string]int     `json:"resources"`
	Problems  []snapshot.Problem `json:"problems"`
}

// replayProvider answers with the recorded model exchange of a past run.
func replayProvider(cmd *cobra.Command, st *store.Store, runID string) (model.Provider, error) {
	raw, err := st.Exchange(cmd.Context(), runID)
	if err != nil {
		return nil, usage(fmt.Errorf("--replay: %w", err))
	}
	if len(raw) == 0 {
		return nil, usage(fmt.Errorf("--replay: run %s made no model calls", runID))
	}
	var rec model.Recording
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("--replay: stored exchange of %s: %w", runID, err)
	}
	return script.NewReplay(rec)
}
