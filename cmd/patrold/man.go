package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd is `patrold man --dir DIR`: a man page (section 1) for every
// command, generated from the command tree, for packages (make dist).
func newManCmd(a *app) *cobra.Command {
	var dir, output string
	cmd := &cobra.Command{
		Use:    "man --dir DIR",
		Short:  "Write a man page for every command into DIR (for packaging)",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if dir == "" {
				return usage(fmt.Errorf("--dir: required"))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			hdr := &doc.GenManHeader{Title: "PATROLD", Section: "1", Source: "patrold " + version, Manual: "patrold manual"}
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			fmt.Fprintf(a.stdout, "man pages written to %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the pages into")
	outputFlag(cmd, &output)
	return cmd
}
