-- Continuous responsibilities: standing duties of one AI employee, set up
-- and changed only by operators; the runs (occurrences) that carry them
-- out; and the one-shot wake-ups (a follow-up, or a question to an
-- operator) the employee arms from inside a run.

CREATE TABLE responsibilities (
    tenant_id              uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                     uuid NOT NULL,
    agent_id               uuid NOT NULL,
    name                   text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    charter                text NOT NULL DEFAULT '' CHECK (length(charter) <= 20000),
    -- schedule is a cron expression read in the tenant's time zone; empty
    -- for a responsibility woken only by follow-ups, answers and events.
    schedule               text NOT NULL DEFAULT '' CHECK (length(schedule) <= 200),
    -- The window: consecutive periods of period_secs from window_anchor,
    -- each with its own run limit, follow-up limit and spend cap.
    period_secs            integer NOT NULL CHECK (period_secs BETWEEN 60 AND 31622400),
    window_anchor          timestamptz NOT NULL DEFAULT now(),
    run_limit              integer NOT NULL CHECK (run_limit BETWEEN 1 AND 10000),
    followup_limit         integer NOT NULL CHECK (followup_limit BETWEEN 0 AND 10000),
    spend_cap_cents        bigint NOT NULL CHECK (spend_cap_cents >= 0),
    min_wake_interval_secs integer NOT NULL CHECK (min_wake_interval_secs BETWEEN 60 AND 31622400),
    stop_at                timestamptz,
    subscriptions          text[] NOT NULL DEFAULT '{}' CHECK (cardinality(subscriptions) <= 16),
    status                 text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'stopped')),
    -- epoch grows with every operator change; a wake-up armed in an older
    -- epoch never fires.
    epoch                  bigint NOT NULL DEFAULT 1 CHECK (epoch >= 1),
    created_by             text NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX responsibilities_recent ON responsibilities (tenant_id, created_at DESC, id DESC);
CREATE INDEX responsibilities_by_agent ON responsibilities (tenant_id, agent_id, created_at DESC, id DESC);

-- A run is one occurrence: its own task on the board and a round of the
-- owner. cost_cents is what the runtime reported; NULL after closing means
-- the run's cost was not counted.
CREATE TABLE responsibility_runs (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    responsibility_id uuid NOT NULL,
    task_id           uuid,
    epoch             bigint NOT NULL,
    reason            text NOT NULL CHECK (reason IN ('schedule', 'followup', 'answer', 'event', 'operator')),
    opened_at         timestamptz NOT NULL DEFAULT now(),
    closed_at         timestamptz,
    cost_cents        bigint CHECK (cost_cents >= 0),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, responsibility_id) REFERENCES responsibilities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE SET NULL (task_id)
);

-- At most one open run per responsibility.
CREATE UNIQUE INDEX responsibility_runs_one_open ON responsibility_runs (tenant_id, responsibility_id) WHERE closed_at IS NULL;
CREATE INDEX responsibility_runs_by_time ON responsibility_runs (tenant_id, responsibility_id, opened_at);
CREATE INDEX responsibility_runs_by_task ON responsibility_runs (tenant_id, task_id) WHERE task_id IS NOT NULL;

-- A wake-up armed by the employee: a follow-up at due_at, or a question
-- that expires at due_at.
CREATE TABLE responsibility_wakeups (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    responsibility_id uuid NOT NULL,
    run_id            uuid NOT NULL,
    kind              text NOT NULL CHECK (kind IN ('followup', 'question')),
    epoch             bigint NOT NULL,
    due_at            timestamptz NOT NULL,
    question          text NOT NULL DEFAULT '' CHECK (length(question) <= 1000),
    options           text[] NOT NULL DEFAULT '{}' CHECK (cardinality(options) <= 5),
    state             text NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'fired', 'answered', 'expired', 'cancelled')),
    created_by        text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    settled_at        timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, responsibility_id) REFERENCES responsibilities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, run_id) REFERENCES responsibility_runs (tenant_id, id) ON DELETE CASCADE,
    CHECK ((kind = 'question') = (question <> '')),
    CHECK ((state = 'pending') = (settled_at IS NULL))
);

-- The rule that makes a pending follow-up and a pending question exclude
-- each other: one live wake-up per responsibility, whoever commits first.
CREATE UNIQUE INDEX responsibility_wakeups_one_live ON responsibility_wakeups (tenant_id, responsibility_id) WHERE state = 'pending';
CREATE INDEX responsibility_wakeups_by_time ON responsibility_wakeups (tenant_id, responsibility_id, due_at);
