-- Deliveries without a job per wake-up: workers claim queued wake-ups
-- whose next attempt is due in sets (FOR UPDATE SKIP LOCKED over
-- wakeups_due) and lease them. next_attempt_at is when a queued wake-up
-- may next be attempted: when it is written, after a failed push its
-- backoff, and while a worker holds it the lease's expiry, so a lease
-- that runs out makes the wake-up due again. leased_by names the worker
-- (worker_heartbeats.id) holding it; a worker found lost has its leases
-- released at once.
ALTER TABLE wakeups ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE wakeups ADD COLUMN leased_by text;

CREATE INDEX wakeups_due ON wakeups (next_attempt_at) WHERE state = 'queued';

-- Delivery jobs queued before this change move to their wake-ups: a job
-- waiting for a retry keeps its time. A job running on an older worker
-- now leaves its wake-up to that worker for two minutes (as a lease
-- would); if it is still queued then, a claimer takes it. The job rows of
-- pending deliveries are deleted; any later deliver_wakeup job (inserted
-- by an older replica during a rolling upgrade) completes without a push,
-- as its wake-up is claimed like any other.
UPDATE wakeups w SET next_attempt_at = j.at
FROM (
    SELECT (args->>'tenant_id')::uuid AS tenant_id, (args->>'wakeup_id')::uuid AS id,
        max(CASE WHEN state = 'running' THEN now() + interval '2 minutes' ELSE scheduled_at END) AS at
    FROM river_job
    WHERE kind = 'deliver_wakeup' AND state IN ('available', 'scheduled', 'retryable', 'running')
    GROUP BY 1, 2
) j
WHERE w.tenant_id = j.tenant_id AND w.id = j.id AND w.state = 'queued';

DELETE FROM river_job WHERE kind = 'deliver_wakeup' AND state IN ('available', 'scheduled', 'retryable');
