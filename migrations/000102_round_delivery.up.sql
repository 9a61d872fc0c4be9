-- Delivery of rounds. due_at is when the wake-up was meant to happen (a
-- reminder's time, a routine's slot; otherwise when it was written), so
-- lateness is measurable. A wake-up turning ready (no push endpoint: the
-- runtime long-polls) is announced on the visor_wakeups channel with
-- "<tenant>:<agent>", which wakes that employee's waiting long-polls on
-- every replica.

ALTER TABLE wakeups ADD COLUMN due_at timestamptz NOT NULL DEFAULT now();

CREATE INDEX wakeups_by_task ON wakeups (tenant_id, task_id) WHERE state IN ('queued', 'ready');

CREATE FUNCTION wakeups_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('visor_wakeups', NEW.tenant_id::text || ':' || NEW.agent_id::text);
    RETURN NULL;
END;
$$;

CREATE TRIGGER wakeups_ready_notify AFTER INSERT OR UPDATE OF state ON wakeups
    FOR EACH ROW WHEN (NEW.state = 'ready') EXECUTE FUNCTION wakeups_notify_ready();

-- Ending a task's rounds revokes its round tokens.
CREATE INDEX round_tokens_by_task ON round_tokens (tenant_id, task_id) WHERE revoked_at IS NULL;
