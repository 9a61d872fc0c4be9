package responsibilities_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/tools"
)

// TestToolsListedOnlyWhileEnabledAndNeverToExternals: the three tools are
// hidden while the tenant's [responsibilities] enabled is off (and every
// call refused), and always from external clients; employees and
// operators see them when it is on.
func TestToolsListedOnlyWhileEnabledAndNeverToExternals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reg := tools.NewRegistry()
	f.svc.Register(reg)
	names := []string{"responsibility_get", "responsibility_followup", "responsibility_ask"}
	with := func(sub *tools.Subject, on bool) *tools.Subject {
		c := *sub
		c.Tenant.Settings.Responsibilities = on
		return &c
	}
	for _, name := range names {
		tl, ok := reg.Get(name)
		require.True(t, ok, name)
		require.Equal(t, tools.GateResponsibilities, tl.Gate)
		for who, sub := range map[string]*tools.Subject{"employee": f.ada, "operator": f.op, "external": f.ext} {
			d := reg.Decide(with(sub, false), tl, map[string]any{})
			require.False(t, d.Allowed, "%s as %s while off", name, who)
			require.False(t, d.Visible(), "%s as %s while off", name, who)
		}
		d := reg.Decide(with(f.ext, true), tl, map[string]any{})
		require.False(t, d.Visible(), "%s is never listed to an external client", name)
		require.True(t, reg.Decide(with(f.ada, true), tl, map[string]any{}).Allowed, "%s as an employee while on", name)
	}
	require.True(t, reg.Decide(with(f.op, true), mustGet(t, reg, "responsibility_get"), map[string]any{}).Allowed, "operators read responsibilities")
}

func mustGet(t *testing.T, reg *tools.Registry, name string) *tools.Tool {
	t.Helper()
	tl, ok := reg.Get(name)
	require.True(t, ok, name)
	return tl
}

// TestAnOperatorListsNoToolItMayNeverCall: what a caller lists is what it
// may call. responsibility_followup and responsibility_ask act for the
// calling AI employee inside its own run, so the one policy hides them
// from an operator key (which every such call would refuse) instead of
// listing them and refusing each call.
func TestAnOperatorListsNoToolItMayNeverCall(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reg := tools.NewRegistry()
	f.svc.Register(reg)
	op := *f.op
	op.Tenant.Settings.Responsibilities = true
	var listed []string
	for _, tl := range reg.Visible(&op) {
		listed = append(listed, tl.Name)
	}
	require.Equal(t, []string{"responsibility_get"}, listed)
	for _, name := range []string{"responsibility_followup", "responsibility_ask"} {
		d := reg.Decide(&op, mustGet(t, reg, name), map[string]any{})
		require.False(t, d.Allowed, name)
		require.Equal(t, tools.EventCapabilityDenied, d.Event, name)
	}
}

func TestToolHandlersAnswerWithClosedCodes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reg := tools.NewRegistry()
	f.svc.Register(reg)
	r := f.resp(t, f.adaID)
	f.openRun(t, r)
	call := func(name string, sub *tools.Subject, args map[string]any) (*tools.Result, error) {
		tl, _ := reg.Get(name)
		return tl.Handler(f.ctx, tools.Call{Subject: sub, Name: name, Args: args})
	}
	_, err := call("responsibility_followup", f.ada, map[string]any{"responsibility_id": r.ID.String(), "due_at": "tomorrow"})
	code(t, err, responsibilities.InvalidDueAt, "an unparsable due_at")
	_, err = call("responsibility_get", f.ada, map[string]any{"responsibility_id": "nope"})
	code(t, err, responsibilities.NotFound, "a malformed id")
	_, err = call("responsibility_ask", f.ada, map[string]any{"responsibility_id": r.ID.String(), "question": "ok?", "options": []any{"a", 1.0}})
	code(t, err, responsibilities.InvalidQuestion, "a non-string option")

	due := f.clock().Add(time.Hour).Format(time.RFC3339)
	res, err := call("responsibility_followup", f.ada, map[string]any{"responsibility_id": r.ID.String(), "due_at": due})
	require.NoError(t, err)
	require.Contains(t, res.Text, due)
	_, err = call("responsibility_ask", f.ada, map[string]any{"responsibility_id": r.ID.String(), "question": "ok?",
		"ttl_secs": json.Number("120")})
	code(t, err, responsibilities.AgentFollowupLimit)

	res, err = call("responsibility_get", f.ada, map[string]any{})
	require.NoError(t, err)
	require.Contains(t, res.Text, r.ID.String())
	res, err = call("responsibility_get", f.bob, map[string]any{"responsibility_id": r.ID.String()})
	require.NoError(t, err, "a related employee reads it")
	sum := res.Structured.(responsibilities.Summary)
	require.NotNil(t, sum.OpenRun)
	require.NotNil(t, sum.Live)
	require.Equal(t, responsibilities.Followup, sum.Live.Kind)
}
