package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/daemon"
)

func newNotifyCmd(a *app) *cobra.Command {
	var listen, output string
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Run the notification sinks (notify.sinks) as durable consumers of the events stream",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("output") {
				cfg.Log.Format = output // notify's output is its log, as serve's
			}
			if len(cfg.Notify.Sinks) == 0 {
				return usage(errNoSinks)
			}
			if cfg.Notify.InServe {
				return usage(errInServe)
			}
			return daemon.RunNotify(cmd.Context(), daemon.NotifyOptions{Config: cfg, Listen: listen, Stderr: a.stderr, Ready: a.notifyReady})
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
