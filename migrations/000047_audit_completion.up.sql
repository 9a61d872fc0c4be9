-- A side-effecting tools/call is recorded before its tool runs, as a
-- 'pending' row, and that same row is completed with the outcome once the
-- tool has answered; so a side effect never exists without its row. A
-- pending row may be completed once; every other row stays append-only, and
-- a completion may change only the outcome columns.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_outcome_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_outcome_check
    CHECK (outcome IN ('pending', 'ok', 'tool_error', 'rejected', 'refused', 'failed'));

CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.outcome = 'pending' AND NEW.outcome <> 'pending'
       AND (NEW.tenant_id, NEW.id, NEW.at, NEW.principal_kind, NEW.principal_id, NEW.tool, NEW.args_digest,
            NEW.source, NEW.action, NEW.object, NEW.change)
           IS NOT DISTINCT FROM
           (OLD.tenant_id, OLD.id, OLD.at, OLD.principal_kind, OLD.principal_id, OLD.tool, OLD.args_digest,
            OLD.source, OLD.action, OLD.object, OLD.change) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only';
END $$;
