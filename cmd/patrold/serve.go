package main

import (
	"bytes"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/daemon"
)

func newServeCmd(a *app) *cobra.Command {
	var output string
	var acceptNew bool
	cmd := &cobra.Command{
		Use: "serve",
		Example: "  patrold serve --config /etc/patrold/patrold.yaml\n" +
			"  PATROLD_LOG_LEVEL=debug patrold serve --config /etc/patrold/patrold.yaml",
		Short: "Run the daemon: scheduler, API, NATS, outbox relay, assistant worker",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.logConfig(cmd, output)
			if err != nil {
				return err
			}
			return cliErr(daemon.Run(cmd.Context(), daemon.Options{Config: cfg, ConfigPath: a.configPath, Reload: a.reload, Stderr: a.stderr,
				AcceptNewDatabase: acceptNew}))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "log format: text or json (overrides log.format)")
	cmd.Flags().BoolVar(&acceptNew, "accept-new-database", false,
		"start on a new or empty database although the events stream holds this source's finding events (they are announced again)")
	return cmd
}

func indentJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return raw
	}
	return buf.Bytes()
}
