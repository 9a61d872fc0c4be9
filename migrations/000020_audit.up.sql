-- The audit trail: one row per tools/call and per refusal (docs/tools.md, "The audit trail").
-- Append-only: rows are inserted in batches by the group-commit writer and
-- never updated; they go only with their tenant.
CREATE TABLE audit_events (
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id             uuid NOT NULL,
    at             timestamptz NOT NULL,
    principal_kind text NOT NULL CHECK (principal_kind IN ('operator', 'employee', 'external')),
    principal_id   text NOT NULL,
    tool           text NOT NULL,
    -- SHA-256 of the canonical arguments without secret parameters; never values.
    args_digest    text NOT NULL DEFAULT '',
    outcome        text NOT NULL CHECK (outcome IN ('ok', 'tool_error', 'refused', 'failed')),
    code           bigint NOT NULL DEFAULT 0,
    event_type     text NOT NULL,
    message        text NOT NULL DEFAULT '',
    latency_us     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX audit_events_tenant_time ON audit_events (tenant_id, at DESC, id DESC);

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only';
END $$;

CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
