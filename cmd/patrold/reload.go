package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/internal/dirlock"
)

// ReloadResult is `patrold reload --output json`.
type ReloadResult struct {
	Status string `json:"status"` // "reloaded"
	API    string `json:"api"`    // the address asked
	PID    int    `json:"pid"`    // the daemon's, from the data_dir lock (0: unknown)
}

// newReloadCmd is `patrold reload`: the running daemon re-reads its
// configuration. It goes through the authenticated POST /-/reload, not
// SIGHUP, so it works across users and hosts and gets the outcome back:
// a refused configuration is exit 2 naming the key, no daemon exit 1.
func newReloadCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Make the running daemon re-read its configuration (POST /-/reload)",
		Long: "Make the running daemon re-read and apply its configuration file, as SIGHUP does, " +
			"and print the outcome. The daemon is the one holding data_dir (its API address is in " +
			"the data_dir lock), else the one at http.listen; the call needs an admin token in http.tokens. " +
			"A configuration the daemon refuses leaves the previous one in force (exit 2).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			addr, pid := cfg.HTTP.Listen, 0
			if h, err := dirlock.ReadHolder(cfg.DataDir); err == nil && h != nil && h.API != "" {
				addr, pid = h.API, h.PID
			}
			token, _ := pickToken(cfg, true)
			base := "http://" + addr
			c, err := api.NewClient(base, token, &http.Client{Timeout: 60 * time.Second})
			if err != nil {
				return usage(fmt.Errorf("http.listen: %w", err))
			}
			err = c.Reload(cmd.Context())
			var ae *api.Error
			switch {
			case errors.As(err, &ae) && ae.Code == api.CodeReloadFailed:
				why := strings.TrimPrefix(strings.TrimPrefix(ae.Message, "reload failed: "), "reload: ")
				return usage(fmt.Errorf("the daemon at %s kept its configuration: %s", base, why))
			case errors.As(err, &ae) && (ae.Code == api.CodeUnauthorized || ae.Code == api.CodeForbidden):
				return fmt.Errorf("the daemon at %s refused the reload (%s): it needs an admin token in http.tokens", base, ae.Code)
			case err != nil:
				return fmt.Errorf("no reload at %s: %s", base, unreachable(err))
			}
			if output == "json" {
				return a.printJSON(ReloadResult{Status: "reloaded", API: addr, PID: pid})
			}
			who := "the daemon at " + base
			if pid != 0 {
				who += fmt.Sprintf(" (pid %d)", pid)
			}
			fmt.Fprintf(a.stdout, "reloaded: %s re-read and applied its configuration; keys that take effect only after a restart are logged by it\n", who)
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
