package knowledge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

type runs map[uuid.UUID]uuid.UUID // round task → run task

func (r runs) RunOf(_ context.Context, _, _, task uuid.UUID) (uuid.UUID, bool, error) {
	run, ok := r[task]
	return run, ok, nil
}

func TestDeriveSource(t *testing.T) {
	ctx := context.Background()
	tenant, agent, task, round, call := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	emp := identity.Principal{TenantID: tenant, Kind: identity.KindEmployee, AgentID: agent}

	p := emp
	p.TaskID, p.CredentialID = task, "round:"+round.String()
	src, err := knowledge.Derive(ctx, nil, p, call)
	require.NoError(t, err)
	require.Equal(t, knowledge.Source{Key: "round:" + round.String(), Kind: knowledge.KindRound, AgentID: agent, TaskID: task,
		Principal: "agent:" + agent.String()}, src, "a round token's write comes from its round, not the call")

	run := uuid.New()
	src, err = knowledge.Derive(ctx, runs{task: run}, p, call)
	require.NoError(t, err)
	require.Equal(t, "run:"+run.String(), src.Key, "a round of a responsibility run writes as the run")
	require.Equal(t, knowledge.KindRun, src.Kind)

	key := emp
	key.CredentialID = "key:" + uuid.NewString()
	src, err = knowledge.Derive(ctx, nil, key, call)
	require.NoError(t, err)
	require.Equal(t, "call:"+call.String(), src.Key, "outside a round: the call itself")

	for name, bad := range map[string]identity.Principal{
		"unparsable round id": {TenantID: tenant, Kind: identity.KindEmployee, AgentID: agent, TaskID: task, CredentialID: "round:zzz"},
		"round without task":  {TenantID: tenant, Kind: identity.KindEmployee, AgentID: agent, CredentialID: "round:" + round.String()},
		"round without agent": {TenantID: tenant, Kind: identity.KindEmployee, TaskID: task, CredentialID: "round:" + round.String()},
		"nil round id":        {TenantID: tenant, Kind: identity.KindEmployee, AgentID: agent, TaskID: task, CredentialID: "round:" + uuid.Nil.String()},
		"task without round":  {TenantID: tenant, Kind: identity.KindEmployee, AgentID: agent, TaskID: task, CredentialID: "key:x"},
	} {
		_, err := knowledge.Derive(ctx, nil, bad, call)
		require.Error(t, err, name)
		require.Equal(t, knowledge.MsgMalformed, fault.Message(err), name)
	}
	require.True(t, strings.HasPrefix(knowledge.MsgMalformed, "Not stored: this employee process carries a malformed conversation or run identity"))
}

func TestValidKey(t *testing.T) {
	id := uuid.NewString()
	for _, k := range []string{"round:" + id, "run:" + id, "call:" + id} {
		require.True(t, knowledge.ValidKey(k), k)
	}
	for _, k := range []string{"", "round", "round:", "turn:" + id, "round:" + strings.ToUpper(id), "call:" + uuid.Nil.String(), "call:" + id + " "} {
		require.False(t, knowledge.ValidKey(k), k)
	}
}
