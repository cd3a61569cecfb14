package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newNotifyCmd(a *app) *cobra.Command {
	var listen, output string
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Run the notification sinks (notify.sinks) as durable consumers of the events stream",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.logConfig(cmd, output)
			if err != nil {
				return err
			}
			if len(cfg.Notify.Sinks) == 0 {
				return usage(errNoSinks)
			}
			if cfg.Notify.InServe {
				return usage(errInServe)
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			return errors.Join(root.Notify(cmd.Context(), listen, a.notifyReady), root.Close())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve /metrics and /healthz on this address (default: none)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "log format: text or json (overrides log.format)")
	return cmd
}

var (
	errNoSinks = errors.New("notify.sinks: no sink is configured")
	// One process per sink: two would split a sink's consumer and an
	// Alertmanager sink's in-memory state.
	errInServe = errors.New("notify.in_serve: true runs the sinks inside patrold serve; set it to false to run them with patrold notify")
)
