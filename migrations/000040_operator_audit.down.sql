DROP INDEX audit_events_operator_time;
DELETE FROM audit_events WHERE source <> 'mcp';
ALTER TABLE audit_events DROP CONSTRAINT audit_events_outcome_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_outcome_check
    CHECK (outcome IN ('ok', 'tool_error', 'refused', 'failed'));
ALTER TABLE audit_events DROP COLUMN source, DROP COLUMN action, DROP COLUMN object, DROP COLUMN change;
