-- Runs of continuous responsibilities as rounds on the board: a run's task
-- carries origin 'responsibility' and its round the reason
-- 'responsibility'; each run remembers the wake-up that started its round
-- and whether its runtime reported any spend. A wake-up that did not open
-- a run (over the run limit or the spend cap, not active, past stop_at, an
-- older epoch) leaves a skip row saying why.

ALTER TABLE tasks DROP CONSTRAINT tasks_origin_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_origin_check
    CHECK (origin IN ('direct', 'routine', 'reminder', 'message', 'spawn', 'responsibility'));

ALTER TABLE wakeups DROP CONSTRAINT wakeups_reason_check;
ALTER TABLE wakeups ADD CONSTRAINT wakeups_reason_check
    CHECK (reason IN ('routine', 'reminder', 'message', 'assigned', 'unblocked', 'handoff', 'responsibility'));

ALTER TABLE responsibility_runs ADD COLUMN wakeup_id uuid;
-- reports counts the runtime's spend reports; cost_cents sums them.
ALTER TABLE responsibility_runs ADD COLUMN reports integer NOT NULL DEFAULT 0 CHECK (reports >= 0);

CREATE TABLE responsibility_skips (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    responsibility_id uuid NOT NULL,
    reason            text NOT NULL CHECK (reason IN ('schedule', 'followup', 'answer', 'event', 'operator')),
    cause             text NOT NULL CHECK (cause IN ('run_limit', 'spend_cap', 'not_active', 'stop_at', 'epoch_changed', 'agent_inactive')),
    detail            text NOT NULL CHECK (length(detail) <= 500),
    epoch             bigint NOT NULL,
    at                timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, responsibility_id) REFERENCES responsibilities (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX responsibility_skips_recent ON responsibility_skips (tenant_id, responsibility_id, at DESC, id DESC);
CREATE INDEX responsibility_runs_recent ON responsibility_runs (tenant_id, responsibility_id, opened_at DESC, id DESC);
