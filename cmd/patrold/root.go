package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/termsafe"
	"github.com/patrold/patrold/store"
)

// Set by the linker (-X main.version=...).
var (
	version = "dev"
	commit  = ""
)

type app struct {
	configPath string
	reload     chan struct{}
	stdout     io.Writer
	stderr     io.Writer
	cfg        *config.Config
	// configUsed is the file loadConfig read ("" for the defaults alone).
	configUsed string
	// notifyReady, when set, is told the metrics address of `notify` (tests).
	notifyReady func(addr string)
	// workerReady, when set, is told the health address of `worker` (tests).
	workerReady func(addr string)
	// cpuProfile is --cpuprofile: a CPU profile of the whole command,
	// written when it returns (profile.go).
	cpuProfile  string
	stopProfile func() error
	// getenv, when set, is the process's environment, and `run` sets its
	// collector for a one-shot run (oneShotGC); nil in tests that run
	// commands in their own process.
	getenv func(string) string
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "patrold",
		Short:         "Infrastructure patrol daemon",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Every text the CLI prints passes termsafe: a value from a source
	// or a model cannot drive the terminal.
	if _, ok := a.stdout.(*termsafe.Writer); !ok && a.stdout != nil {
		a.stdout = termsafe.NewWriter(a.stdout)
	}
	// --version prints what `patrold version` prints.
	root.Version = version
	root.SetVersionTemplate(versionLine())
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "configuration file (default /etc/patrold/patrold.yaml, then ./patrold.yaml)")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (for measuring one-shot commands)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return a.startProfile() }
	daemon.Version, daemon.Commit = version, commit
	root.AddCommand(
		newServeCmd(a), newRunCmd(a), newFindingsCmd(a), newRunsCmd(a), newSnapshotCmd(a), newDemoCmd(a),
		newConfigCmd(a), newMigrateCmd(a), newVersionCmd(a),
		newAssistantCmd(a), newApprovalsCmd(a), newNotifyCmd(a), newWorkerCmd(a), newDBCmd(a),
		newSilencesCmd(a), newStatusCmd(a), newManCmd(a), newEvalCmd(a), newTriggerCmd(a), newCoverageCmd(a),
		newReloadCmd(a),
	)
	requireSubcommands(root)
	registerCompletions(a, root)
	return root
}

// args wraps a cobra argument validator so bad usage exits 2.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error { return usage(v(cmd, a)) }
}

// loadConfig loads and validates the configuration once per command.
func (a *app) loadConfig() (*config.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	cfg, used, err := config.LoadFile(a.configPath)
	if err != nil {
		return nil, usage(err)
	}
	a.cfg, a.configUsed = cfg, used
	return cfg, nil
}

// logConfig loads the configuration for a long-running command whose
// output is its log (serve, notify, worker): --output, when given, sets
// log.format.
func (a *app) logConfig(cmd *cobra.Command, output string) (*config.Config, error) {
	if err := checkOutput(output); err != nil {
		return nil, err
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	if cmd.Flags().Changed("output") {
		cfg.Log.Format = output
	}
	return cfg, nil
}

// newRoot returns the composition root for the loaded configuration; the
// caller closes it.
func (a *app) newRoot() (*daemon.Root, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	return daemon.NewRoot(cfg, daemon.RootOptions{Stderr: a.stderr})
}

// openStore opens the store through a new root; closing the root closes it.
func (a *app) openStore(ctx context.Context) (*daemon.Root, *store.Store, error) {
	root, err := a.newRoot()
	if err != nil {
		return nil, nil, err
	}
	st, err := root.Store(ctx)
	if err != nil {
		return nil, nil, errors.Join(err, root.Close())
	}
	return root, st, nil
}

// openExistingStore opens the store of a command that only reads or
// changes what is recorded: a missing database is an error, never
// created (serve, run and migrate create it).
func (a *app) openExistingStore(ctx context.Context) (*daemon.Root, *store.Store, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(cfg.DataDir, daemon.DBFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no database at %s (data_dir %s): nothing is recorded there yet; `patrold serve`, `patrold run` or `patrold migrate` creates it", path, cfg.DataDir)
	}
	return a.openStore(ctx)
}

// checkID refuses an argument that cannot be an id of that kind, as bad
// usage (exit 2), before any database or API is asked.
func checkID(kind, id string) error {
	var ok bool
	switch kind {
	case "finding":
		ok = contracts.ValidFindingID(id)
	default: // runs and approvals: ULIDs
		_, err := ulid.ParseStrict(id)
		ok = err == nil
	}
	if !ok {
		want := "16 lower-case hex characters"
		if kind != "finding" {
			want = "a ULID (26 characters)"
		}
		return usage(fmt.Errorf("%s id %q: must be %s", kind, truncateArg(id), want))
	}
	return nil
}

func truncateArg(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// cliErr reports a part the configuration refused as a usage error.
func cliErr(err error) error {
	var ce *daemon.ConfigError
	if errors.As(err, &ce) {
		return usage(err)
	}
	return err
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func outputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "text", "output format: text or json")
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return usage(fmt.Errorf("--output: %q is not text or json", o))
	}
	return nil
}

// VersionInfo is `patrold version --output json`.
type VersionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

func newVersionCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and Go version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(VersionInfo{Version: version, Commit: orNone(buildCommit()), Go: runtime.Version()})
			}
			fmt.Fprint(a.stdout, versionLine())
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// buildCommit is the commit stamped by the linker, else the one the Go
// toolchain recorded.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

// versionLine is what `patrold version` and `patrold --version` print.
func versionLine() string {
	return fmt.Sprintf("patrold %s (commit %s, %s)\n", version, orNone(buildCommit()), runtime.Version())
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Configuration commands"}
	var output string
	check := &cobra.Command{
		Use: "check",
		Example: "  sudo patrold config check --config /etc/patrold/patrold.yaml\n" +
			"  patrold config check --output json",
		Short: "Load and validate the configuration and print it with secrets hidden",
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
			// What serve would refuse, check refuses too.
			if err := root.Check(); err != nil {
				return usage(err)
			}
			// Root reads every file; the service's user may not.
			if os.Geteuid() == 0 {
				warnServiceAccess(a.stderr, a.configUsed, cfg, lookupService())
			}
			if output == "json" {
				// The YAML rendering is the one with config keys and hidden
				// secrets; JSON is that document re-encoded.
				var doc map[string]any
				if err := yamlv3.Unmarshal([]byte(cfg.String()), &doc); err != nil {
					return fmt.Errorf("render config: %w", err)
				}
				return a.printJSON(doc)
			}
			fmt.Fprint(a.stdout, cfg.String())
			return nil
		},
	}
	outputFlag(check, &output)
	cmd.AddCommand(check)
	return cmd
}

// MigrateResult is `patrold migrate --output json`.
type MigrateResult struct {
	Database string `json:"database"`
	Version  int64  `json:"version"`
}

func newMigrateCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations and exit",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			root, st, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer root.Close()
			v, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(MigrateResult{Database: root.DBPath(), Version: v})
			}
			fmt.Fprintf(a.stdout, "database %s is up to date (schema version %d)\n", root.DBPath(), v)
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
