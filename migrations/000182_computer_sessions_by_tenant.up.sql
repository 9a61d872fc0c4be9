-- The dashboard lists a tenant's computer-use sessions newest first.
CREATE INDEX computer_sessions_newest ON computer_sessions (tenant_id, started_at DESC, id DESC);
