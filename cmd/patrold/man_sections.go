package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/dirlock"
)

// Exit codes of every command (exitCode maps an error onto them).
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// exitStatuses are the codes a page's EXIT STATUS lists, in order.
var exitStatuses = []struct {
	Code    int
	Meaning string
}{
	{exitOK, "success"},
	{exitRuntime, "a runtime failure: the database, NATS, a source, the model or the daemon's API failed or did not answer"},
	{exitUsage, "bad usage or input: an unknown command or flag, a bad argument, or an invalid configuration (the message names the key)"},
}

// manExtra is what a main command's page says beyond the command tree.
type manExtra struct {
	// exit adds, per code, what that code means for this command.
	exit map[int]string
}

// manExtras are the main commands whose pages carry EXIT STATUS, FILES,
// ENVIRONMENT and EXAMPLES (their Example field).
var manExtras = map[string]manExtra{
	"patrold serve": {exit: map[int]string{
		exitOK:      "stopped by SIGTERM or SIGINT after draining",
		exitRuntime: "another process holds data_dir, or a part failed to start",
	}},
	"patrold run": {exit: map[int]string{
		exitOK:      "the run completed, whatever it found",
		exitRuntime: "the run failed, or a daemon holding data_dir is already running one",
	}},
	"patrold findings": {exit: map[int]string{
		exitUsage: "a malformed finding id, state or page cursor",
	}},
	"patrold findings list": {exit: map[int]string{
		exitUsage: "a malformed state, severity or page cursor",
	}},
	"patrold config check": {exit: map[int]string{
		exitOK:    "the configuration is valid (warnings may still be printed on standard error)",
		exitUsage: "the configuration is invalid; every problem names its key",
	}},
	"patrold status": {exit: map[int]string{
		exitRuntime: "no daemon answered at http.listen",
	}},
}

// manSections renders the sections manExtras adds to cmd's page, in roff.
func manSections(cmd *cobra.Command) string {
	extra, ok := manExtras[cmd.CommandPath()]
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(".SH EXIT STATUS\n")
	for _, s := range exitStatuses {
		text := s.Meaning
		if more := extra.exit[s.Code]; more != "" {
			text += "; here: " + more
		}
		fmt.Fprintf(&b, ".TP\n.B %d\n%s.\n", s.Code, roff(text))
	}
	b.WriteString(".SH FILES\n")
	for _, p := range config.DefaultPaths {
		fmt.Fprintf(&b, ".TP\n.I %s\n%s\n", roff(p), roff("The configuration, when --config is not given (tried in order)."))
	}
	for _, f := range [][2]string{
		{"<data_dir>/" + daemon.DBFile, "The SQLite database: findings, runs, silences and the outbox."},
		{"<data_dir>/" + dirlock.FileName, "The lock of the process that holds data_dir, with its pid and API address."},
		{filepath.Join(config.Credstore, "NAME"), "A secret the unit passes as a credential (LoadCredential=NAME); outside the service ${CREDENTIALS_DIRECTORY} stands for this directory."},
	} {
		fmt.Fprintf(&b, ".TP\n.I %s\n%s\n", roff(f[0]), roff(f[1]))
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range [][2]string{
		{config.EnvPrefix + "<SECTION>_<KEY>", "Overrides one configuration key, after the file: " + config.EnvPrefix + "DATA_DIR sets data_dir, " + config.EnvPrefix + "HTTP_LISTEN sets http.listen. A variable that names no key is an error."},
		{config.CredentialsVar, "The directory systemd hands the service's credentials in; a *_file key may name ${" + config.CredentialsVar + "}/NAME. Unset, it is " + config.Credstore + "."},
	} {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(e[0]), roff(e[1]))
	}
	return b.String()
}

// roff escapes text for a roff line: backslashes, hyphens (minus signs
// otherwise) and a leading dot or quote.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// withSections puts the added sections of cmd before SEE ALSO (or at the
// end) and names cobra's EXAMPLE section EXAMPLES, as man-pages(7) does.
func withSections(cmd *cobra.Command, page []byte) []byte {
	page = bytes.Replace(page, []byte("\n.SH EXAMPLE\n"), []byte("\n.SH EXAMPLES\n"), 1)
	add := manSections(cmd)
	if add == "" {
		return page
	}
	at := bytes.Index(page, []byte("\n.SH SEE ALSO\n"))
	if at < 0 {
		return append(page, add...)
	}
	at++
	return append(page[:at:at], append([]byte(add), page[at:]...)...)
}
