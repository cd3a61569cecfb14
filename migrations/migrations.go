// Package migrations embeds patrold's numbered SQL migrations (goose format).
package migrations

import "embed"

// FS holds the *.sql migration files.
//
//go:embed *.sql
var FS embed.FS
