package auth_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
)

// recorder is a changes.Publisher that keeps the events, standing in for
// the Redis bus between replicas.
type recorder struct {
	mu     sync.Mutex
	events []changes.Event
}

func (r *recorder) Publish(_ context.Context, e changes.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) deliver(t *testing.T, to changes.Publisher) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.events, "the change published no event")
	for _, e := range r.events {
		require.NoError(t, to.Publish(context.Background(), e))
	}
	r.events = nil
}

// TestCacheOnAnotherReplica shows a second replica's cached principal
// outlives a revocation only until the change event reaches it, and
// without an event only until CredentialCacheTTL passes.
func TestCacheOnAnotherReplica(t *testing.T) {
	t.Parallel()
	db := newKeyEnv(t).db
	store := postgres.NewIdentityStore(db)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := &recorder{}
	svc := identity.NewService(store, bus, log)
	ctx := context.Background()
	tn, err := store.TenantBySlug(ctx, "acme")
	require.NoError(t, err)

	other := auth.NewResolver(store, store, auth.NewURLs("https://visor.test"), log)
	now := time.Now()
	auth.SetClock(other, func() time.Time { return now })
	resolve := func(token string) error {
		_, err := other.Resolve(ctx, tn, token)
		return err
	}

	k1, tok1, err := svc.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "one"})
	require.NoError(t, err)
	k2, tok2, err := svc.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "two"})
	require.NoError(t, err)
	bus.deliver(t, other)
	require.NoError(t, resolve(tok1))
	require.NoError(t, resolve(tok2))

	// Revoked, event delivered: refused at once.
	_, err = svc.RevokeKey(ctx, tn.ID, k1.ID)
	require.NoError(t, err)
	require.NoError(t, resolve(tok1), "cached until the event arrives (the documented bound)")
	bus.deliver(t, other)
	require.True(t, fault.Is(resolve(tok1), fault.Unauthorized))

	// Revoked, event lost: refused once the TTL has passed.
	require.NoError(t, resolve(tok2))
	_, err = svc.RevokeKey(ctx, tn.ID, k2.ID)
	require.NoError(t, err)
	bus.events = nil // lost
	require.NoError(t, resolve(tok2), "cached within the TTL")
	now = now.Add(auth.CredentialCacheTTL)
	require.True(t, fault.Is(resolve(tok2), fault.Unauthorized))

	// Failures are never cached: a refused token stays refused, and a new
	// key works at once.
	_, tok3, err := svc.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "three"})
	require.NoError(t, err)
	require.NoError(t, resolve(tok3))
	require.True(t, fault.Is(resolve(tok1), fault.Unauthorized))
}

// TestCacheNeverOutlivesExpiry shows a key's cached principal ends with
// the key's own expiry, even inside the TTL and without an event.
func TestCacheNeverOutlivesExpiry(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	now := time.Now()
	auth.SetClock(env.resolver, func() time.Time { return now })
	exp := now.Add(time.Second)
	_, token := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator, ExpiresAt: &exp})
	_, err := env.resolver.Resolve(ctx, env.a, token)
	require.NoError(t, err)
	now = exp
	_, err = env.resolver.Resolve(ctx, env.a, token)
	require.True(t, fault.Is(err, fault.Unauthorized))
}
