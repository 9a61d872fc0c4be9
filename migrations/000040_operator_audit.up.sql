-- Operator actions join the audit trail: every change made through the
-- admin API or the CLI is a row next to the tool calls, with where it came
-- from, what was done (the admin API's operation id; the CLI uses the same
-- names), the object it was done to, and the change without secret values.
ALTER TABLE audit_events
    ADD COLUMN source text NOT NULL DEFAULT 'mcp' CHECK (source IN ('mcp', 'admin_api', 'cli')),
    ADD COLUMN action text NOT NULL DEFAULT '',
    ADD COLUMN object text NOT NULL DEFAULT '',
    -- The change as compact JSON with every secret replaced by a marker;
    -- args_digest holds its SHA-256. Empty for tool calls (never values).
    ADD COLUMN change text NOT NULL DEFAULT '';

-- An operator request the API refused as malformed or conflicting (a 4xx
-- other than a refusal) is 'rejected'.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_outcome_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_outcome_check
    CHECK (outcome IN ('ok', 'tool_error', 'rejected', 'refused', 'failed'));

-- Operator actions are few next to tool calls; this keeps reading them fast.
CREATE INDEX audit_events_operator_time ON audit_events (tenant_id, at DESC, id DESC) WHERE source <> 'mcp';
