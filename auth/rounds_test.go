package auth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

func TestRoundTokens(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	task := env.task(t, env.a)
	rt, token, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, 0)
	require.NoError(t, err)

	res, p := env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, identity.KindEmployee, p.Kind)
	require.Equal(t, env.agentA.ID, p.AgentID)
	require.Equal(t, task, p.TaskID, "the round's task is bound into the credential")
	require.Equal(t, "round:"+rt.ID.String(), p.CredentialID)
	require.True(t, p.HasScope(identity.ScopeToolsWrite))

	// Another tenant, a tampered secret, a revoked token, an expired one,
	// a trashed agent: all 401.
	res, _ = env.get(t, "/t/globex/probe", token)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	tampered := token[:len(token)-2] + "xx"
	res, _ = env.get(t, "/t/acme/probe", tampered)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	_, revokedTok, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, 0)
	require.NoError(t, err)
	id := mustRoundID(t, revokedTok)
	require.NoError(t, env.creds.RevokeRoundToken(ctx, env.a.ID, id))
	res, _ = env.get(t, "/t/acme/probe", revokedTok)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.True(t, fault.Is(env.creds.RevokeRoundToken(ctx, env.b.ID, id), fault.NotFound), "revoking through another tenant")

	_, expiredTok, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, time.Minute)
	require.NoError(t, err)
	_, err = env.db.Pool.Exec(ctx, `UPDATE round_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, mustRoundID(t, expiredTok))
	require.NoError(t, err)
	res, _ = env.get(t, "/t/acme/probe", expiredTok)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	_, err = env.svc.TrashAgent(ctx, env.a.ID, env.agentA.ID)
	require.NoError(t, err)
	res, _ = env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	// Minting refuses a trashed agent, another tenant's agent, no task, bad TTLs and scopes.
	_, _, err = env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, 0)
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	_, _, err = env.rounds.Mint(ctx, env.b.ID, env.agentA.ID, task, nil, 0)
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, _, err = env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, uuid.Nil, nil, 0)
	require.True(t, fault.Is(err, fault.Invalid))
	_, _, err = env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, nil, 48*time.Hour)
	require.True(t, fault.Is(err, fault.Invalid))
	_, _, err = env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, task, []string{"root"}, 0)
	require.True(t, fault.Is(err, fault.Invalid))
}

func mustRoundID(t *testing.T, token string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(token[4:36])
	require.NoError(t, err)
	return id
}
