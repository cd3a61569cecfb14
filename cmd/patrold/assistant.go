package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/store"
)

func newAssistantCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "assistant", Short: "Remediation session commands"}
	var findingID, output, replay string
	run := &cobra.Command{
		Use:   "run --finding ID",
		Short: "Run one remediation session now in the foreground and print its transcript and outcome",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if findingID == "" {
				return usage(fmt.Errorf("--finding: required"))
			}
			root, st, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer root.Close()
			f, err := st.Get(cmd.Context(), findingID)
			if err != nil {
				return fmt.Errorf("finding %s: %w", findingID, err)
			}
			// The outcome is recorded on the finding only when an
			// investigation is running for it; otherwise it is printed only.
			req := assistant.Request{FindingID: f.ID}
			var rec assistant.Recorder
			if f.InvestigationStatus == findings.InvestigationRunning {
				req.Attempt, rec = f.Attempt, st
			}
			var provider model.Provider
			if replay != "" {
				if provider, err = sessionReplay(cmd, st, replay); err != nil {
					return err
				}
			}
			asst, err := root.Assistant(cmd.Context(), rec, provider)
			if err != nil {
				return cliErr(err)
			}
			res, err := asst.Run(cmd.Context(), req)
			if res != nil {
				if output == "json" {
					if perr := a.printJSON(res.Transcript); perr != nil {
						return perr
					}
				} else {
					printTranscript(a.stdout, res)
				}
			}
			return err
		},
	}
	run.Flags().StringVar(&findingID, "finding", "", "id of the finding to remediate")
	run.Flags().StringVar(&replay, "replay", "", "drive the session with the recorded model exchange of session ID (re-execution against a replay)")
	outputFlag(run, &output)
	cmd.AddCommand(run)
	return cmd
}

// sessionReplay answers with the recorded model exchange of a past session,
// under the recorded provider's name (so it is priced the same).
func sessionReplay(cmd *cobra.Command, st *store.Store, sessionID string) (model.Provider, error) {
	rec, err := assistant.SessionExchange(cmd.Context(), st, sessionID)
	if err != nil {
		return nil, usage(fmt.Errorf("--replay: %w", err))
	}
	r, err := script.NewReplay(rec)
	if err != nil {
		return nil, fmt.Errorf("--replay: %w", err)
	}
	return namedProvider{Provider: r, name: rec.Provider}, nil
}

// namedProvider reports another name for a provider.
type namedProvider struct {
	model.Provider
	name string
}

func (p namedProvider) Name() string { return p.name }

func printTranscript(w io.Writer, res *assistant.Result) {
	t := res.Transcript
	fmt.Fprintf(w, "session %s  finding %s  driver=%s  attempt=%d\n", t.SessionID, t.FindingID, t.Driver, res.Attempt)
	for _, s := range t.Steps {
		code := ""
		if s.Code != "" {
			code = " " + string(s.Code)
		}
		fmt.Fprintf(w, "  %2d %-16s %-10s %-17s %s -> %s%s\n", s.Turn, s.Tool, s.Kind, s.Status, s.StateBefore, s.StateAfter, code)
	}
	states := make([]string, 0, 5)
	for _, s := range t.States() {
		states = append(states, string(s))
	}
	fmt.Fprintf(w, "states: %s\n", strings.Join(states, " -> "))
	if !t.FinalAnswer.Empty() {
		fmt.Fprintf(w, "answer: %s\n", t.FinalAnswer)
	}
	if len(t.NoteStripped) > 0 {
		fmt.Fprintf(w, "note: %d ungrounded figures or ids stripped\n", len(t.NoteStripped))
	}
	if t.Escalation != "" {
		fmt.Fprintf(w, "escalated: %s\n", t.Escalation)
	}
	if t.FinalAnswerBlocked > 0 {
		fmt.Fprintf(w, "final answers refused (unverified write): %d\n", t.FinalAnswerBlocked)
	}
	if res.ApprovalID != "" {
		fmt.Fprintf(w, "approval: %s (patrold approvals approve %s)\n", res.ApprovalID, res.ApprovalID)
	}
	fmt.Fprintf(w, "outcome: %s  final_state=%s  %s\n", t.Outcome, t.FinalState, res.Summary)
}
