-- Names of AI employees removed through MCP (agent_remove). A reservation
-- outlives the agent's row: create_agent refuses a reserved name while the
-- agent is in the trash and also after its row is gone ("recorded without
-- its row"), until an operator restores the agent, reuses the name through
-- the admin API, or releases the reservation.
CREATE TABLE agent_name_reservations (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL,
    agent_id    uuid NOT NULL,
    reserved_by text NOT NULL,
    reserved_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);
