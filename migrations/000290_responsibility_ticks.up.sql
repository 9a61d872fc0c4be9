-- A responsibility's next scheduled tick lives on its row, in its current
-- epoch, so workers claim due ticks in sets (FOR UPDATE SKIP LOCKED over
-- this index) instead of working one queued job per tick.
ALTER TABLE responsibilities ADD COLUMN next_tick_at timestamptz;

CREATE INDEX responsibilities_due_ticks ON responsibilities (next_tick_at) WHERE next_tick_at IS NOT NULL;

-- Ticks armed as jobs before this change move to their rows; a tick of an
-- older epoch would not have fired.
UPDATE responsibilities r SET next_tick_at = j.at
FROM (
    SELECT (args->>'tenant_id')::uuid AS tenant_id, (args->>'responsibility_id')::uuid AS id,
        (args->>'epoch')::bigint AS epoch, min((args->>'at')::timestamptz) AS at
    FROM river_job
    WHERE kind = 'responsibility_tick' AND state IN ('available', 'scheduled', 'retryable')
    GROUP BY 1, 2, 3
) j
WHERE r.tenant_id = j.tenant_id AND r.id = j.id AND r.epoch = j.epoch AND r.status = 'active';

DELETE FROM river_job WHERE kind = 'responsibility_tick' AND state IN ('available', 'scheduled', 'retryable');
