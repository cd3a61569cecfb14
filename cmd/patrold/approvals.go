package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/termsafe"
)

// approvalsClientSlack is added to investigation.timeout for the HTTP
// client of approve: the daemon answers once the resumed session ended.
const approvalsClientSlack = time.Minute

func newApprovalsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: "Pending write approvals"}
	var output string
	var page findings.Page
	list := &cobra.Command{
		Use:   "list",
		Short: "List pending approvals",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := checkPage("approvals", page); err != nil {
				return err
			}
			var out []assistant.ApprovalView
			next := ""
			err := a.withApprovals(cmd.Context(), false, func(c *api.Client) error {
				raw, n, err := c.ApprovalsPage(cmd.Context(), page)
				if err == nil {
					next, err = n, json.Unmarshal(raw, &out)
				}
				return apiErr(err)
			}, func(asst *assistant.Assistant) (err error) {
				out, next, err = asst.PendingViews(cmd.Context(), page)
				return err
			})
			if err != nil {
				return err
			}
			defer a.nextPage(next)
			if output == "json" {
				return a.printPage(cmd, "approvals", out, len(out), next)
			}
			for i := range out {
				printApproval(a.stdout, &out[i])
			}
			if len(out) == 0 {
				fmt.Fprintln(a.stdout, "no pending approvals")
			}
			return nil
		},
	}
	outputFlag(list, &output)
	pageFlags(list, &page, findings.DefaultPageLimit)
	cmd.AddCommand(list, decideCmd(a, "approve", "Approve a pending write; its session resumes and runs it"),
		decideCmd(a, "deny", "Deny a pending write; its session ends fix_rejected"))
	return cmd
}

func decideCmd(a *app, action, short string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			id := argv[0]
			if err := checkID("approval", id); err != nil {
				return err
			}
			var d assistant.DecisionResult
			err := a.withApprovals(cmd.Context(), true, func(c *api.Client) error {
				decide := c.Approve
				if action == "deny" {
					decide = c.Deny
				}
				raw, err := decide(cmd.Context(), id)
				if err == nil {
					err = json.Unmarshal(raw, &d)
				}
				return approvalErr(err)
			}, func(asst *assistant.Assistant) error {
				decide := asst.Approve
				if action == "deny" {
					decide = asst.Deny
				}
				out, err := decide(cmd.Context(), id, "cli")
				if r, ok := out.(*assistant.DecisionResult); ok {
					d = *r
				}
				return err
			})
			if err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(d)
			}
			fmt.Fprintf(a.stdout, "%s %s: action %s on %s; session %s ended %s\n", d.Approval.State, d.Approval.ID, d.Approval.Action,
				d.Approval.ResourceID, d.Approval.SessionID, d.Outcome)
			if d.Summary != "" {
				fmt.Fprintf(a.stdout, "  %s\n", d.Summary)
			}
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// withApprovals runs viaAPI when the daemon answers (it holds the
// sessions and publishes the events), else viaStore on an Assistant over
// the local database that records outcomes on the findings directly.
func (a *app) withApprovals(ctx context.Context, mutating bool, viaAPI func(*api.Client) error, viaStore func(*assistant.Assistant) error) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	c, err := a.liveClient(ctx, mutating, cfg.Investigation.Timeout+approvalsClientSlack)
	if err != nil {
		return err
	}
	if c != nil {
		return viaAPI(c)
	}
	root, st, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	defer root.Close()
	asst, err := root.Assistant(ctx, st, nil)
	if err != nil {
		return cliErr(err)
	}
	return viaStore(asst)
}

// approvalErr maps the API's approval codes onto the errors the local
// path returns, so messages and exit codes do not depend on the backend.
func approvalErr(err error) error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case api.CodeApprovalNotFound:
		return fmt.Errorf("%s: %w", ae.Message, api.ErrApprovalNotFound)
	case api.CodeApprovalExpired:
		return fmt.Errorf("%s: %w", ae.Message, api.ErrApprovalExpired)
	case api.CodeApprovalDecided:
		return fmt.Errorf("%s: %w", ae.Message, api.ErrApprovalDecided)
	}
	return err
}

// printApproval shows an approver what will run: the declared action,
// its command template and risk, the target, the live condition, and the
// model's reason labelled as the model's words. Every field is escaped.
func printApproval(w io.Writer, ap *assistant.ApprovalView) {
	f := termsafe.Field
	fmt.Fprintf(w, "%s  finding %s  expires %s\n", f(ap.ID), f(ap.FindingID), ap.ExpiresAt.Format(time.RFC3339))
	desc := ap.Declared.Description
	if ap.Declared.Missing {
		desc = "(no longer declared: the approval cannot run)"
	}
	fmt.Fprintf(w, "  action:       %s: %s\n", f(ap.Action), f(desc))
	fmt.Fprintf(w, "  command:      %s\n", f(strings.Join(ap.Declared.Command, " ")))
	fmt.Fprintf(w, "  risk:         %s\n", f(string(ap.Declared.Risk)))
	target := f(ap.Target.Kind) + " " + f(ap.Target.ID)
	if ap.Target.Name != "" {
		target += " (" + f(ap.Target.Name) + ")"
	}
	fmt.Fprintf(w, "  target:       %s\n", target)
	if c := ap.Condition; c != nil {
		fmt.Fprintf(w, "  condition:    %s %s %s (%s): %s\n", f(string(c.Status)), f(string(c.Severity)), f(c.Key), f(string(c.Source)), f(c.Title))
		if c.Evidence != "" {
			fmt.Fprintf(w, "  evidence:     %s\n", f(c.Evidence))
		}
	} else {
		fmt.Fprintln(w, "  condition:    (the finding is gone)")
	}
	if !ap.Reason.Empty() {
		fmt.Fprintf(w, "  model's words (not checked): %s\n", f(ap.Reason.String()))
	}
}
