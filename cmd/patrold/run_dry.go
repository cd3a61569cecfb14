package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
)

// dryRunHelp is the --dry-run flag's help: how it writes nothing.
const dryRunHelp = "patrol and print the report, writing nothing: the run goes to a throwaway copy " +
	"of data_dir's database (deleted after), so no store write and no event published; " +
	"a configured model is still called"

// dryRun runs one patrol against a copy of data_dir's database in a
// temporary directory. The live data_dir is only read; with a daemon
// holding it the copy could be torn, so the dry run is refused.
func (a *app) dryRun(ctx context.Context, cfg *config.Config, ro patrol.RunOptions, replay daemon.Replay) (*patrol.Report, error) {
	held, holder, err := dirlock.Held(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if held {
		return nil, fmt.Errorf("--dry-run: data_dir %s is held by %s; stop it, or run on a copy of data_dir", cfg.DataDir, holder)
	}
	tmp, err := os.MkdirTemp("", "patrold-dry-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, suffix := range []string{"", "-wal"} {
		if err := copyFile(filepath.Join(cfg.DataDir, daemon.DBFile+suffix), filepath.Join(tmp, daemon.DBFile+suffix)); err != nil {
			return nil, fmt.Errorf("--dry-run: copy the database: %w", err)
		}
	}
	dry := *cfg
	dry.DataDir = tmp
	root, err := daemon.NewRoot(&dry, daemon.RootOptions{Stderr: a.stderr})
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.RunOnce(ctx, ro, replay)
}

// copyFile copies src to dst; a missing src copies nothing.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// warnForeignFindings warns, before a one-shot --snapshot run, when the
// data_dir was last patrolled from another source: its active findings on
// resources the snapshot lacks would be resolved by their absence.
func warnForeignFindings(ctx context.Context, w io.Writer, cfg *config.Config, st *store.Store, snap *snapshot.Snapshot) error {
	runs, err := st.Runs(ctx, 1)
	if err != nil || len(runs) == 0 {
		return err
	}
	var last struct {
		Source string `json:"source"`
	}
	if rec, err := st.Run(ctx, runs[0].ID); err == nil && len(rec.Report) > 0 {
		_ = json.Unmarshal(rec.Report, &last) // an unreadable report is an unknown source
	}
	if last.Source == snap.Source {
		return nil
	}
	active, err := st.Active(ctx)
	if err != nil {
		return err
	}
	in := make(map[string]bool, len(snap.Resources))
	for i := range snap.Resources {
		in[snap.Resources[i].ID] = true
	}
	n := 0
	for _, f := range active {
		if !in[f.ResourceID] {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	from := last.Source
	if from == "" {
		from = "an unknown source"
	}
	_, err = fmt.Fprintf(w, "warning: data_dir %s holds %d active findings from %s on resources this snapshot lacks; "+
		"this run resolves them (--dry-run writes nothing; or use a copy of data_dir)\n", cfg.DataDir, n, from)
	return err
}
