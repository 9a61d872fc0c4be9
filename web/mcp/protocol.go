package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stateless is the first protocol version the endpoint answers without a
// session (the stateless SDK handler, the fast paths for tools/list,
// tools/call and subscriptions/listen). Every earlier version is a
// session-based era. This file is the one place that names a version; the
// rest of the package asks Stateless and IsStateless.
const Stateless = "2026-07-28"

// Versions lists the protocol versions the endpoint speaks, newest first:
// those of the SDK it serves through.
func Versions() []string { return sdk.SupportedProtocolVersions() }

// IsStateless reports whether version v is Stateless or later (versions
// are dates, so they order as strings).
func IsStateless(v string) bool { return v >= Stateless }
