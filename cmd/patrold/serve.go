package main

import (
	"bytes"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/daemon"
)

func newServeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: scheduler, API, NATS, outbox relay, assistant worker",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			return daemon.Run(cmd.Context(), daemon.Options{Config: cfg, ConfigPath: a.configPath, Reload: a.reload, Stderr: a.stderr})
		},
	}
}

func indentJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return raw
	}
	return buf.Bytes()
}
