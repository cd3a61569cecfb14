package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
)

// actionCmds builds the operator action subcommands of `findings`.
func actionCmds(a *app) []*cobra.Command {
	type spec struct {
		action findings.Action
		short  string
		flags  func(cmd *cobra.Command, req *findings.ActionRequest, dur *string)
	}
	specs := []spec{
		{findings.ActionAcknowledge, "Acknowledge a finding", nil},
		{findings.ActionSnooze, "Snooze a finding for 1h..168h", func(cmd *cobra.Command, _ *findings.ActionRequest, dur *string) {
			cmd.Flags().StringVar(dur, "for", "", "how long, e.g. 4h (1h..168h)")
		}},
		{findings.ActionDismiss, "Dismiss a finding with a reason", func(cmd *cobra.Command, req *findings.ActionRequest, _ *string) {
			cmd.Flags().StringVar(&req.Reason, "reason", "", "not_an_issue, expected_behavior or will_fix_later")
		}},
		{findings.ActionUndismiss, "Undo a dismissal", nil},
		{findings.ActionSuppress, "Suppress: drop future findings for this resource and category", nil},
		{findings.ActionUnsuppress, "Remove a suppression", nil},
		{findings.ActionResolve, "Resolve a finding with a note", func(cmd *cobra.Command, req *findings.ActionRequest, _ *string) {
			cmd.Flags().StringVar(&req.Note, "note", "", "what was done (required)")
		}},
	}
	var out []*cobra.Command
	for _, s := range specs {
		var req findings.ActionRequest
		var dur, output string
		cmd := &cobra.Command{
			Use:   string(s.action) + " ID",
			Short: s.short,
			Args:  args(cobra.ExactArgs(1)),
		}
		if s.flags != nil {
			s.flags(cmd, &req, &dur)
		}
		outputFlag(cmd, &output)
		action := s.action
		cmd.RunE = func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := checkID("finding", argv[0]); err != nil {
				return err
			}
			req.Action, req.Actor = action, "cli"
			if action == findings.ActionSnooze {
				d, err := time.ParseDuration(dur)
				if err != nil {
					return usage(fmt.Errorf("--for: %q is not a duration like 4h", dur))
				}
				req.For = d
			}
			f, err := a.act(cmd, argv[0], req)
			if err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(api.NewFindingView(f, time.Now()))
			}
			fmt.Fprintf(a.stdout, "%s %s: %s (%s)\n", action, f.ID, findings.LoopStateAt(&f, time.Now()), f.Title)
			return nil
		}
		out = append(out, cmd)
	}
	return out
}

// act applies an action through the store; bad input exits 2.
func (a *app) act(cmd *cobra.Command, id string, req findings.ActionRequest) (findings.Finding, error) {
	be, err := a.backend(cmd.Context(), true)
	if err != nil {
		return findings.Finding{}, err
	}
	defer be.Close()
	f, err := be.Act(cmd.Context(), id, req)
	var ie *findings.InputError
	if errors.As(err, &ie) {
		return f, usage(fmt.Errorf("--%s", ie.Error()))
	}
	return f, err
}
