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
			st, _, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
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
			st, _, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
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
	cmd.AddCommand(check, vacuum)
	return cmd
}
