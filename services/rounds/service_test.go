package rounds_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/rounds"
)

// brokenStore fails to read a wake-up and records what Failed is told.
type brokenStore struct {
	rounds.Store
	failed []bool // the dead flag of each Failed call
}

func (b *brokenStore) Target(context.Context, uuid.UUID, uuid.UUID) (rounds.Target, error) {
	return rounds.Target{}, errors.New("connection refused")
}

func (b *brokenStore) Failed(_ context.Context, _, _ uuid.UUID, _ string, dead bool) error {
	b.failed = append(b.failed, dead)
	return nil
}

// TestFinalAttemptNeverLeavesAWakeupQueued: when the last attempt fails
// before it could push (the database is down), the wake-up still becomes
// a dead letter, listed and retryable, instead of staying queued with no
// job left; earlier attempts leave it to the retry.
func TestFinalAttemptNeverLeavesAWakeupQueued(t *testing.T) {
	st := &brokenStore{}
	svc := rounds.NewService(rounds.Config{Store: st})
	ctx := context.Background()
	require.Error(t, svc.Deliver(ctx, uuid.New(), uuid.New(), false))
	require.Empty(t, st.failed, "an attempt that will be retried records nothing")
	require.Error(t, svc.Deliver(ctx, uuid.New(), uuid.New(), true))
	require.Equal(t, []bool{true}, st.failed, "the final attempt makes it a dead letter")
}
