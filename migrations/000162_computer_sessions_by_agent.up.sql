-- An employee's latest session, to tell a caller its last session was lost.
CREATE INDEX computer_sessions_by_agent ON computer_sessions (tenant_id, agent_id, started_at DESC);
