package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
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
			var out []assistant.Approval
			next := ""
			err := a.withApprovals(cmd.Context(), false, func(c *api.Client) error {
				raw, n, err := c.ApprovalsPage(cmd.Context(), page)
				if err == nil {
					next, err = n, json.Unmarshal(raw, &out)
				}
				return apiErr(err)
			}, func(asst *assistant.Assistant) (err error) {
				out, next, err = asst.PendingPage(cmd.Context(), time.Now(), page)
				return err
			})
			if err != nil {
				return err
			}
			defer a.nextPage(next)
			if output == "json" {
				return a.printPage(cmd, "approvals", out, len(out), next)
			}
			for _, ap := range out {
				fmt.Fprintf(a.stdout, "%s  finding %s  %s on %s  risk=%s  expires %s\n", ap.ID, ap.FindingID, ap.Action, prompt.Name(ap.ResourceID), ap.Risk, ap.ExpiresAt.Format(time.RFC3339))
				if ap.Reason != "" {
					fmt.Fprintf(a.stdout, "  reason: %s\n", ap.Reason)
				}
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
	if token, ok := pickToken(cfg, mutating); ok {
		hc := &http.Client{Timeout: cfg.Investigation.Timeout + approvalsClientSlack}
		c, err := api.NewClient("http://"+cfg.HTTP.Listen, token, hc)
		if err == nil && c.Ping(ctx) == nil {
			return viaAPI(c)
		}
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
