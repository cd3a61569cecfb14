package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
			if err := genManTree(root, dir); err != nil {
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

// genManTree writes a page for cmd and every available command below it,
// each headed by its own name (PATROLD-SERVE(1)); the main commands'
// pages carry the sections of manSections.
func genManTree(cmd *cobra.Command, dir string) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := genManTree(c, dir); err != nil {
			return err
		}
	}
	// An empty Title is the command path, upper-cased and dashed.
	hdr := &doc.GenManHeader{Section: "1", Source: "patrold " + version, Manual: "patrold manual"}
	var page bytes.Buffer
	if err := doc.GenMan(cmd, hdr, &page); err != nil {
		return err
	}
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + ".1"
	return os.WriteFile(filepath.Join(dir, name), withSections(cmd, page.Bytes()), 0o644)
}
