package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newTriggerCmd is `patrold trigger`: ask the writer for a scoped run
// over NATS (docs/NATS.md#trigger-requests), as a monitor would.
func newTriggerCmd(a *app) *cobra.Command {
	var resources []string
	var reason, output string
	cmd := &cobra.Command{
		Use:   "trigger --resource ID... [--reason TEXT]",
		Short: "Ask the running writer over NATS for a scoped run over resources, under the trigger rate limits",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if len(resources) == 0 {
				return usage(errors.New("--resource: at least one resource id"))
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			defer root.Close()
			ans, err := root.SendTrigger(cmd.Context(), resources, reason)
			if err != nil {
				return cliErr(err)
			}
			if output == "json" {
				return a.printJSON(ans)
			}
			line := fmt.Sprintf("trigger %s: %s", ans.Outcome, strings.Join(ans.Resources, ", "))
			if ans.RunID != "" {
				line += " (run " + ans.RunID + ")"
			}
			fmt.Fprintln(a.stdout, line)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&resources, "resource", nil, "a resource id the run is to patrol (repeatable)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is asked for (recorded in the run report)")
	outputFlag(cmd, &output)
	return cmd
}
