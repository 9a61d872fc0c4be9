package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// refuseAuditRows makes Postgres refuse, as a constraint would, the audit
// rows of tenant that match when (a trigger condition on NEW), on insert
// or on update.
func (s *stack) refuseAuditRows(t *testing.T, op string, tenant identity.Tenant, when string) {
	t.Helper()
	name := fmt.Sprintf("refuse_%s_%s", strings.ToLower(op), strings.ReplaceAll(tenant.Slug, "-", "_"))
	_, err := s.db.Pool.Exec(context.Background(), fmt.Sprintf(`
		CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused for the test' USING ERRCODE = 'check_violation'; END $$;
		CREATE TRIGGER %[1]s BEFORE %[2]s ON audit_events FOR EACH ROW
			WHEN (NEW.tenant_id = '%[3]s' AND %[4]s) EXECUTE FUNCTION %[1]s();`, name, op, tenant.ID, when))
	require.NoError(t, err)
}

// TestRefusedAuditRowsOfOneTenantFailNoOtherTenant: Postgres refuses every
// audit row of tenant acme while acme floods create_agent; meanwhile every
// create_agent of tenant globex succeeds and is audited, and none of acme's
// ran: a side-effecting call whose row cannot be made durable is not run.
func TestRefusedAuditRowsOfOneTenantFailNoOtherTenant(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	globex, err := s.ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	_, tok, err := s.ids.CreateKey(ctx, globex.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ops", Scopes: []string{identity.ScopeToolsAdmin}})
	require.NoError(t, err)
	other := &stack{fixture: &fixture{url: strings.Replace(s.url, "/t/acme/", "/t/globex/", 1)}, keys: map[string]string{"op": tok}}
	s.refuseAuditRows(t, "INSERT", s.tenant, "true")

	const floodCalls, globexCalls = 60, 30
	var wg sync.WaitGroup
	acmeErrs := make(chan string, floodCalls)
	for i := range floodCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := s.call(t, "op", "create_agent", fmt.Sprintf(`{"name":"flood%d"}`, i)).rpcErr(t)
			acmeErrs <- fmt.Sprint(e["code"], " ", e["message"])
		}()
	}
	globexTexts := make(chan string, globexCalls)
	for i := range globexCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			globexTexts <- text(t, other.call(t, "op", "create_agent", fmt.Sprintf(`{"name":"g%d"}`, i)).result(t))
		}()
	}
	wg.Wait()
	close(acmeErrs)
	close(globexTexts)
	for msg := range globexTexts {
		require.Contains(t, msg, "Created AI employee g")
	}
	rows, err := s.log.List(ctx, globex.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rows, globexCalls, "every call of globex is audited")
	for _, r := range rows {
		require.Equal(t, audit.OutcomeOK, r.Outcome, "each row completed")
	}
	for msg := range acmeErrs {
		require.Equal(t, "-32603 the audit trail is unavailable, so the call was not run; retry later", msg)
	}
	for i := range floodCalls {
		_, err := s.ids.AgentByName(ctx, s.tenant.ID, fmt.Sprintf("flood%d", i))
		require.True(t, fault.Is(err, fault.NotFound), "flood%d was created without its audit row", i)
	}
}

// TestCallWhoseOutcomeCannotBeRecordedKeepsItsPendingRow: when the row
// was made durable as pending but its completion is refused, the side
// effect exists with that row, and the caller is told the call ran.
func TestCallWhoseOutcomeCannotBeRecordedKeepsItsPendingRow(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	s.refuseAuditRows(t, "UPDATE", s.tenant, "NEW.tool = 'create_agent'")

	e := s.call(t, "op", "create_agent", `{"name":"carl"}`).rpcErr(t)
	require.EqualValues(t, -32603, e["code"])
	require.Contains(t, e["message"], "the call ran and is recorded as pending")
	_, err := s.ids.AgentByName(ctx, s.tenant.ID, "carl")
	require.NoError(t, err, "the side effect happened")
	row := s.lastAudit(t)
	require.Equal(t, "create_agent", row.Tool)
	require.Equal(t, audit.OutcomePending, row.Outcome, "and its row is there")

	// A read-only tool writes one row, after it ran.
	require.NotContains(t, s.call(t, "op", "agent_status", `{}`).result(t), "isError")
	require.Equal(t, audit.OutcomeOK, s.lastAudit(t).Outcome)
}

// TestFloodOfNULNamesFailsNoOtherTenant is the flood that used to fail
// everyone's batch: tenant acme sends tools/call after tools/call with a
// NUL in the tool name while globex calls create_agent. Each of acme's is
// -32602 and audited with a storable name; each of globex's succeeds and
// is audited.
func TestFloodOfNULNamesFailsNoOtherTenant(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	globex, err := s.ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	_, tok, err := s.ids.CreateKey(ctx, globex.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ops", Scopes: []string{identity.ScopeToolsAdmin}})
	require.NoError(t, err)
	other := &stack{fixture: &fixture{url: strings.Replace(s.url, "/t/acme/", "/t/globex/", 1)}, keys: map[string]string{"op": tok}}

	const floodCalls, globexCalls = 80, 30
	var wg sync.WaitGroup
	codes := make(chan any, floodCalls)
	for range floodCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_agent\u0000","arguments":{"name":"x"},` + modernMeta + `}}`
			codes <- s.rpc(t, s.keys["op"], modernHeaders("tools/call", ""), body).rpcErr(t)["code"]
		}()
	}
	for i := range globexCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := other.call(t, "op", "create_agent", fmt.Sprintf(`{"name":"g%d"}`, i)).result(t)
			require.Contains(t, text(t, res), "Created AI employee")
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		require.EqualValues(t, -32602, c)
	}
	rows, err := s.log.List(ctx, globex.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rows, globexCalls)
	rows, err = s.log.List(ctx, s.tenant.ID, audit.Filter{Limit: 1000, Event: "invalid_text"})
	require.NoError(t, err)
	require.Len(t, rows, floodCalls)
	require.Equal(t, "create_agent\uFFFD", rows[0].Tool)
}
