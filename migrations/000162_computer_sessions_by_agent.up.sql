-- An employee's latest session (to tell a caller its last session was
-- lost), and every session a worker ever held (a janitor judges only the
-- workers of its own deployment).
CREATE INDEX computer_sessions_by_agent ON computer_sessions (tenant_id, agent_id, started_at DESC);
CREATE INDEX computer_sessions_by_any_worker ON computer_sessions (worker);
