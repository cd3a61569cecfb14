package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
)

// newStatusCmd is `patrold status`: what the running daemon is doing, from
// GET /api/v1/status. Only the daemon knows it, so no daemon answering is
// a runtime failure (exit 1).
func newStatusCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use: "status",
		Example: "  patrold status --config /etc/patrold/patrold.yaml\n" +
			"  patrold status --output json",
		Short: "Show what the running daemon is doing (its /api/v1/status)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			token, _ := pickToken(cfg, false)
			base := "http://" + cfg.HTTP.Listen
			c, err := api.NewClient(base, token, &http.Client{Timeout: 30 * time.Second})
			if err != nil {
				return usage(fmt.Errorf("http.listen: %w", err))
			}
			raw, err := c.Status(cmd.Context())
			if err != nil {
				return fmt.Errorf("no daemon status at %s: %s", base, unreachable(err))
			}
			if output == "json" {
				_, err = a.stdout.Write(append(indentJSON(raw), '\n'))
				return err
			}
			var s api.Status
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("status from %s: %w", base, err)
			}
			printStatus(a, &s)
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func printStatus(a *app, s *api.Status) {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	run := "-"
	if s.LastRunID != "" {
		run = fmt.Sprintf("%s %s at %s", s.LastRunID, s.LastRunStatus, at(s.LastRunAt))
	}
	current := s.CurrentRunID
	if current == "" {
		current = "-"
	}
	for _, r := range [][2]string{
		{"version", s.Version}, {"started", s.StartedAt.UTC().Format(time.RFC3339)}, {"role", s.Role},
		{"source", s.Source}, {"schedule", s.Schedule}, {"autonomy", s.Autonomy},
		{"current run", current}, {"last run", run}, {"last success", at(s.LastSuccessAt)},
		{"active findings", fmt.Sprint(s.ActiveCount)}, {"outbox pending", fmt.Sprint(s.OutboxPending)}, {"nats", s.NATSURL},
	} {
		fmt.Fprintf(a.stdout, "%-16s %s\n", r[0]+":", r[1])
	}
}

// daemonHint tells an operator what to do when no daemon answers.
const daemonHint = "start the daemon (patrold serve, or systemctl start patrold), " +
	"or give --config the file of the daemon whose http.listen this is"

// unreachable says why no daemon answered, in words, not as a raw dial
// error; other errors (an HTTP answer that is not a status) stay whole.
func unreachable(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens there (connection refused); " + daemonHint
	case errors.As(err, &op) && op.Op == "dial":
		return "cannot connect (" + op.Err.Error() + "); " + daemonHint
	}
	return err.Error()
}
