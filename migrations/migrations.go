// Package migrations embeds Visor's numbered schema migrations.
//
// Files are named NNNNNN_name.up.sql and NNNNNN_name.down.sql. Numbers are
// allocated in ranges per area so parallel work does not collide:
// 1-9 identity and platform, 10-19 OAuth, 20-29 MCP and audit, 30-39 live
// changes and grants; later areas take the next free range.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
