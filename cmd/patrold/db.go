package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// DBResult is `patrold db check|vacuum --output json`.
type DBResult struct {
	Database string `json:"database"`
	Version  int64  `json:"schema_version"`
	Status   string `json:"status"` // ok, vacuumed
	Bytes    int64  `json:"bytes"`
	// BytesBefore is the file size before vacuum (db + WAL).
	BytesBefore int64 `json:"bytes_before,omitempty"`
}

func newDBCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "db", Short: "Database maintenance"}
	var checkOut, vacOut string
	check := &cobra.Command{
		Use:   "check",
		Short: "Run SQLite's full integrity check on the database (exit 1 when it finds problems)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(checkOut); err != nil {
				return err
			}
			root, st, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer root.Close()
			if err := st.Check(cmd.Context(), true); err != nil {
				return err
			}
			v, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			size, wal := st.Size()
			res := DBResult{Database: st.Path(), Version: v, Status: "ok", Bytes: size + wal}
			if checkOut == "json" {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "database %s: ok (schema version %d, %d bytes)\n", res.Database, v, res.Bytes)
			return nil
		},
	}
	outputFlag(check, &checkOut)
	vacuum := &cobra.Command{
		Use:   "vacuum",
		Short: "Rewrite the database file, returning the space of deleted rows to the file system",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(vacOut); err != nil {
				return err
			}
			root, st, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer root.Close()
			size, wal := st.Size()
			if err := st.Vacuum(cmd.Context()); err != nil {
				return err
			}
			v, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			after, walAfter := st.Size()
			res := DBResult{Database: st.Path(), Version: v, Status: "vacuumed", Bytes: after + walAfter, BytesBefore: size + wal}
			if vacOut == "json" {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "database %s: vacuumed, %d -> %d bytes\n", res.Database, res.BytesBefore, res.Bytes)
			return nil
		},
	}
	outputFlag(vacuum, &vacOut)
	var seedOut string
	var force bool
	seed := &cobra.Command{
		Use:   "seed [--force]",
		Short: "Cluster mode: replace this instance's database with a copy from a caught-up instance (the daemon must be stopped)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(seedOut); err != nil {
				return err
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			defer root.Close()
			res, err := root.Seed(cmd.Context(), force)
			if err != nil {
				return cliErr(err)
			}
			if seedOut == "json" {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "database %s: seeded from %s (signed with key %s) at state sequence %d (%d bytes)\n", res.Database, res.Origin,
				res.Signer, res.AppliedSeq, res.Bytes)
			if res.Backup != "" {
				fmt.Fprintf(a.stdout, "the replaced database is kept as %s\n", res.Backup)
			}
			return nil
		},
	}
	seed.Flags().BoolVar(&force, "force", false, "replace an existing database (kept beside it)")
	outputFlag(seed, &seedOut)
	cmd.AddCommand(check, vacuum, seed)
	return cmd
}
