-- The admin list pages capability requests newest first by (created_at, id),
-- and capability_request counts one agent's recent requests before each
-- insert.
CREATE INDEX capability_requests_newest ON capability_requests (tenant_id, created_at DESC, id DESC);
CREATE INDEX capability_requests_by_agent ON capability_requests (tenant_id, agent_id, created_at);
