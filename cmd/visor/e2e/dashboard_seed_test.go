package e2e

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// seedAgents adds n agents named agent-00001 … to tenantID in one
// statement, as a large team would have them.
func (w *world) seedAgents(t testing.TB, tenantID uuid.UUID, n int) {
	t.Helper()
	_, err := w.db.Pool.Exec(context.Background(), `INSERT INTO agents (tenant_id, id, name, department, role)
		SELECT $1, gen_random_uuid(), 'agent-' || lpad(i::text, 5, '0'), 'dept-' || (i % 20), 'worker'
		FROM generate_series(1, $2) AS i`, tenantID, n)
	require.NoError(t, err)
}

// seedAudit adds n audit rows to tenantID, one per second going back from
// now, mixing tool calls, refusals and operator actions, in one statement.
func (w *world) seedAudit(t testing.TB, tenantID uuid.UUID, n int) {
	t.Helper()
	_, err := w.db.Pool.Exec(context.Background(), `INSERT INTO audit_events (tenant_id, id, at, principal_kind, principal_id,
			tool, args_digest, outcome, code, event_type, message, latency_us, source, action, object)
		SELECT $1, gen_random_uuid(), now() - make_interval(secs => i),
			CASE WHEN i % 10 = 0 THEN 'operator' ELSE 'employee' END,
			CASE WHEN i % 10 = 0 THEN 'operator:key:seed' ELSE 'agent:' || (i % 1000) END,
			(ARRAY['agent_status','tasks_list','tasks_create','capability_request','create_agent'])[1 + i % 5], md5(i::text),
			CASE WHEN i % 7 = 0 THEN 'refused' ELSE 'ok' END, 0,
			CASE WHEN i % 7 = 0 THEN 'permission_denied' ELSE 'tool_call' END, '', 1000 + i % 5000,
			CASE WHEN i % 10 = 0 THEN 'admin_api' ELSE 'mcp' END,
			CASE WHEN i % 10 = 0 THEN 'updateAgent' ELSE '' END, ''
		FROM generate_series(1, $2) AS i`, tenantID, n)
	require.NoError(t, err)
	_, err = w.db.Pool.Exec(context.Background(), `ANALYZE audit_events`)
	require.NoError(t, err)
}
