package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newWorkerCmd(a *app) *cobra.Command {
	var listen, output string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a standalone assistant worker: remediation sessions with no database, kept by the writer over NATS",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := a.logConfig(cmd, output); err != nil {
				return err
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			return cliErr(errors.Join(root.Worker(cmd.Context(), listen, a.workerReady), root.Close()))
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve /metrics, /healthz and /readyz on this address (default: none)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "log format: text or json (overrides log.format)")
	return cmd
}
