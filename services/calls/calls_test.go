package calls_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// dir is one tenant with one active employee.
type dir struct {
	tenant identity.Tenant
	agent  identity.Agent
}

func (d dir) Tenant(_ context.Context, id uuid.UUID) (identity.Tenant, error) {
	if id != d.tenant.ID {
		return identity.Tenant{}, fault.New(fault.NotFound, "tenant not found")
	}
	return d.tenant, nil
}

func (d dir) Agent(_ context.Context, tid, id uuid.UUID) (identity.Agent, error) {
	if tid != d.tenant.ID || id != d.agent.ID {
		return identity.Agent{}, fault.New(fault.NotFound, "agent not found")
	}
	return d.agent, nil
}

// failing is an audit trail that cannot make a row durable.
type failing struct{ rows int }

func (f *failing) Record(context.Context, audit.Entry) error {
	f.rows++
	return errors.New("database down")
}

type bundle struct {
	who  identity.Principal
	reg  *tools.Registry
	subs *tools.Subjects
	rec  *audit.Memory
	ran  []string
	// pendingSeen is whether the write tool found its pending row durable.
	pendingSeen bool
}

func setup(t *testing.T) *bundle {
	t.Helper()
	tenant := identity.Tenant{ID: uuid.New(), Slug: "acme", Name: "Acme"}
	agent := identity.Agent{ID: uuid.New(), TenantID: tenant.ID, Name: "ann", Status: identity.AgentActive}
	b := &bundle{who: identity.Principal{TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindEmployee, AgentID: agent.ID,
		Scopes: []string{identity.ScopeToolsRead, identity.ScopeToolsWrite}},
		reg: tools.NewRegistry(), rec: &audit.Memory{}}
	b.subs = tools.NewSubjects(dir{tenant, agent}, tools.NoGrants{}, 0)
	text := []tools.Param{{Name: "text", Type: "string", Description: "Text.", Required: true}}
	b.reg.Register(tools.Tool{Name: "note_write", Description: "Write.", Scope: identity.ScopeToolsWrite, Params: text,
		Handler: func(_ context.Context, c tools.Call) (*tools.Result, error) {
			b.ran = append(b.ran, c.Name)
			for _, e := range b.rec.Entries() {
				b.pendingSeen = b.pendingSeen || e.Outcome == audit.OutcomePending
			}
			switch s, _ := tools.String(c.Args, "text"); s {
			case "boom":
				return nil, errors.New("disk on fire")
			case "rule":
				return nil, fault.New(fault.Conflict, "the note is locked")
			case "mine":
				return nil, tools.Refused(tools.EventRelationshipRefused, "that note is not yours")
			}
			return &tools.Result{Text: "written"}, nil
		}})
	b.reg.Register(tools.Tool{Name: "note_read", Description: "Read.", Scope: identity.ScopeToolsRead,
		Annotations: tools.Annotations{ReadOnly: true},
		Handler: func(context.Context, tools.Call) (*tools.Result, error) {
			b.ran = append(b.ran, "note_read")
			return &tools.Result{Text: "read"}, nil
		}})
	return b
}

func (b *bundle) call(t *testing.T, rec audit.Recorder, name, args string) calls.Answer {
	t.Helper()
	return calls.New(b.reg, b.subs, rec, nil).Call(t.Context(), b.who, name, json.RawMessage(args), nil)
}

// TestEveryCallEndsAsOneAuditRow: each way a call can end leaves one row
// with its outcome, code and event, and the answer the edge needs; a tool
// that writes runs only once its pending row is durable.
func TestEveryCallEndsAsOneAuditRow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tool, args string
		outcome, event   string
		code             int64
		check            func(t *testing.T, a calls.Answer)
	}{
		{"ok", "note_write", `{"text":"hi"}`, audit.OutcomeOK, tools.EventCall, 0,
			func(t *testing.T, a calls.Answer) { require.Equal(t, "written", a.Result.Text) }},
		{"read", "note_read", `{}`, audit.OutcomeOK, tools.EventCall, 0,
			func(t *testing.T, a calls.Answer) { require.Equal(t, "read", a.Result.Text) }},
		{"unknown", "note_burn", `{}`, audit.OutcomeRefused, tools.EventUnknownTool, tools.CodeUnknownTool,
			func(t *testing.T, a calls.Answer) { require.True(t, a.Refusal.Hidden) }},
		{"bad args", "note_write", `{}`, audit.OutcomeToolError, tools.EventCall, 0,
			func(t *testing.T, a calls.Answer) { require.NotEmpty(t, a.ToolError) }},
		{"business rule", "note_write", `{"text":"rule"}`, audit.OutcomeToolError, tools.EventCall, 0,
			func(t *testing.T, a calls.Answer) { require.Equal(t, "the note is locked", a.ToolError) }},
		{"refused by the tool", "note_write", `{"text":"mine"}`, audit.OutcomeRefused, tools.EventRelationshipRefused, tools.CodeRefused,
			func(t *testing.T, a calls.Answer) { require.Equal(t, "that note is not yours", a.Refusal.Reason) }},
		{"internal", "note_write", `{"text":"boom"}`, audit.OutcomeFailed, tools.EventCall, tools.CodeInternal,
			func(t *testing.T, a calls.Answer) {
				require.Equal(t, "internal error while running note_write", a.Failure)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			a := b.call(t, b.rec, tc.tool, tc.args)
			require.False(t, a.Unrecorded)
			tc.check(t, a)
			rows := b.rec.Entries()
			require.Len(t, rows, 1, "one row per call, the pending one completed")
			require.Equal(t, a.Entry.ID, rows[0].ID)
			require.Equal(t, tc.outcome, rows[0].Outcome)
			require.Equal(t, tc.event, rows[0].Event)
			require.Equal(t, tc.code, rows[0].Code)
			if tc.tool == "note_write" && len(b.ran) > 0 {
				require.True(t, b.pendingSeen, "the write ran before its pending row was durable")
			}
		})
	}
}

// TestNoWriteRunsWithoutItsRow: when the audit trail cannot take the
// pending row, the tool does not run and the caller is told so; a read
// runs but its result is withheld.
func TestNoWriteRunsWithoutItsRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	down := &failing{}
	a := b.call(t, down, "note_write", `{"text":"hi"}`)
	require.True(t, a.Unrecorded)
	require.Contains(t, a.Failure, "the call was not run")
	require.Empty(t, b.ran)

	a = b.call(t, down, "note_read", `{}`)
	require.True(t, a.Unrecorded)
	require.Contains(t, a.Failure, "the result was withheld")
	require.Nil(t, a.Result)
}

// TestEdgeRefusalsAreAuditedLikePolicyRefusals: a refusal an edge makes
// before the pipeline (Refuse), and a scope the caller lacks (StepUp),
// leave the same refused row a policy refusal does.
func TestEdgeRefusalsAreAuditedLikePolicyRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := calls.New(b.reg, b.subs, b.rec, nil)
	a := p.Refuse(t.Context(), b.who, "note_write", tools.Decision{Hidden: true, Code: tools.CodeInvalid, Event: tools.EventInvalidText, Reason: "bad text"})
	require.Equal(t, "bad text", a.Refusal.Reason)

	reader := b.who
	reader.Kind, reader.AgentID, reader.ClientID, reader.MemberID = identity.KindExternal, uuid.Nil, "c", uuid.New()
	reader.Scopes = []string{identity.ScopeToolsRead}
	a, ok := p.StepUp(t.Context(), reader, "note_write")
	require.True(t, ok)
	require.Equal(t, identity.ScopeToolsWrite, a.Refusal.NeedScope)
	_, ok = p.StepUp(t.Context(), b.who, "note_read")
	require.False(t, ok, "an allowed tool needs no step-up")

	rows := b.rec.Entries()
	require.Len(t, rows, 2)
	require.Equal(t, []string{tools.EventInvalidText, tools.EventScopeDenied}, []string{rows[0].Event, rows[1].Event})
	for _, r := range rows {
		require.Equal(t, audit.OutcomeRefused, r.Outcome)
	}
}
