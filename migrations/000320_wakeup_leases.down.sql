-- Queued wake-ups lose their claim times; an older worker delivers only
-- wake-ups with a delivery job, so each still queued gets one again.
INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
SELECT jsonb_build_object('tenant_id', tenant_id, 'wakeup_id', id), 'deliver_wakeup', 12, 'rounds', 'available', now()
FROM wakeups WHERE state = 'queued';

DROP INDEX wakeups_due;
ALTER TABLE wakeups DROP COLUMN leased_by;
ALTER TABLE wakeups DROP COLUMN next_attempt_at;
