package auth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// TestARoundTokenNamesARealTask: minting refuses an unknown task, another
// tenant's task and a finished one, and a token, however it was minted,
// stops working when its task ends.
func TestARoundTokenNamesARealTask(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()

	_, _, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, uuid.New(), nil, 0)
	require.True(t, fault.Is(err, fault.NotFound), "an unknown task: %v", err)
	theirs := env.task(t, env.b)
	_, _, err = env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, theirs, nil, 0)
	require.True(t, fault.Is(err, fault.NotFound), "another tenant's task: %v", err)

	task := env.task(t, env.a)
	_, token, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, 0)
	require.NoError(t, err)
	res, _ := env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusOK, res.StatusCode)

	op := board.Operator(identity.Principal{TenantID: env.a.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, env.a)
	cancelled := board.Cancelled
	_, err = env.board.UpdateTask(ctx, op, task, board.Change{Status: &cancelled})
	require.NoError(t, err)
	res, _ = env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a token minted through the API ends with its task")

	_, _, err = env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, 0)
	require.True(t, fault.Is(err, fault.Conflict), "a finished task: %v", err)
}
