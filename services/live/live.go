// Package live keeps every caller's tool list current: it tracks this
// replica's notification streams and tells exactly the callers whose visible
// set of tools changed.
//
// The MCP edge implements Stream and calls Streams.Open; the hub in this
// package implements Streams.
package live

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Stream is one live notification stream this replica holds: a legacy
// session's GET stream or a 2026-07-28 subscriptions/listen stream.
type Stream interface {
	// Principal is the caller the stream belongs to.
	Principal() identity.Principal
	// NotifyToolsChanged sends notifications/tools/list_changed on this
	// stream only, giving up when ctx ends (its deadline is the hub's
	// NotifyTimeout), however slowly the client reads. A stream that fails
	// ends itself, and the hub forgets it.
	NotifyToolsChanged(ctx context.Context) error
	// Close ends the stream because the credential that opened it was
	// revoked, expired or lost its agent: the caller must hear nothing more
	// on it. It must not block; the stream's unregister function still runs
	// when the stream ends and is then a no-op.
	Close()
}

// Streams tracks the live streams of this replica.
type Streams interface {
	// Open registers s and returns the function that unregisters it, which
	// the caller must call when the stream ends. The caller tells its
	// client the stream is open only after Open returns: a change made
	// while Open runs is not announced on s, because the client's next
	// listing already includes it.
	Open(ctx context.Context, s Stream) (unregister func())
}

// NoStreams tracks nothing: its streams never hear of changes. For tests of
// the edge alone.
type NoStreams struct{}

// Open does nothing.
func (NoStreams) Open(context.Context, Stream) func() { return func() {} }

// VisibleFunc returns the names of the tools p can see and call right now,
// in any order. The tools package provides it from the one policy function.
type VisibleFunc func(ctx context.Context, p identity.Principal) ([]string, error)

// ValidFunc re-checks, for each principal of one tenant, the credential
// that authenticated it (Principal.CredentialID) and returns the principal
// as that credential resolves now, parallel to ps: the zero Principal (no
// TenantID) when the credential is no longer valid (a key revoked or its
// agent gone, an OAuth grant revoked or expired, a round token dead), and
// for an OAuth principal its scopes as its member's current role bounds
// them. An error means "could not tell": the hub then closes and changes
// nothing and asks again later. Package auth provides it
// (auth.Validity.Refresh).
type ValidFunc func(ctx context.Context, tenantID uuid.UUID, ps []identity.Principal) ([]identity.Principal, error)
