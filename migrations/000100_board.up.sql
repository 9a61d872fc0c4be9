-- The task board: tasks and goals (a goal is a task whose title,
-- description and acceptance criteria only operators change), their
-- activity, routines (tasks on a cron schedule), reminders, and the
-- ephemeral AI employees spawned for one task.

CREATE TABLE tasks (
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                  uuid NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('task', 'goal')),
    title               text NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
    description         text NOT NULL DEFAULT '' CHECK (length(description) <= 20000),
    acceptance_criteria text NOT NULL DEFAULT '' CHECK (length(acceptance_criteria) <= 10000),
    status              text NOT NULL DEFAULT 'open'
                        CHECK (status IN ('open', 'in_progress', 'blocked', 'done', 'cancelled')),
    blocked_reason      text NOT NULL DEFAULT '' CHECK (length(blocked_reason) <= 2000),
    parent_id           uuid,
    assignee_id         uuid,
    claimer_id          uuid,
    -- creator_kind is the kind of principal that created the task; only
    -- sub-tasks created by AI employees count toward a parent's cap.
    creator_kind        text NOT NULL CHECK (creator_kind IN ('operator', 'employee', 'external', 'system')),
    creator_agent_id    uuid,
    created_by          text NOT NULL,
    -- origin says what made the task: a direct call, or a routine run, a
    -- reminder, a message or a spawn (none of which is a sub-task).
    origin              text NOT NULL DEFAULT 'direct'
                        CHECK (origin IN ('direct', 'routine', 'reminder', 'message', 'spawn')),
    origin_id           uuid,
    tags                text[] NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, parent_id) REFERENCES tasks (tenant_id, id),
    FOREIGN KEY (tenant_id, assignee_id) REFERENCES agents (tenant_id, id) ON DELETE SET NULL (assignee_id),
    FOREIGN KEY (tenant_id, claimer_id) REFERENCES agents (tenant_id, id) ON DELETE SET NULL (claimer_id),
    FOREIGN KEY (tenant_id, creator_agent_id) REFERENCES agents (tenant_id, id) ON DELETE SET NULL (creator_agent_id),
    CHECK ((status IN ('done', 'cancelled')) = (finished_at IS NOT NULL)),
    CHECK (cardinality(tags) <= 32)
);

CREATE INDEX tasks_recent ON tasks (tenant_id, created_at DESC, id DESC);
CREATE INDEX tasks_by_assignee ON tasks (tenant_id, assignee_id, created_at DESC, id DESC);
CREATE INDEX tasks_by_parent ON tasks (tenant_id, parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX tasks_tags ON tasks USING gin (tags);

CREATE TABLE task_activity (
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    task_id          uuid NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('comment', 'created', 'claimed', 'assigned', 'updated',
                                                   'blocked', 'unblocked', 'completed', 'cancelled', 'handoff')),
    author           text NOT NULL,
    author_agent_id  uuid,
    text             text NOT NULL DEFAULT '' CHECK (length(text) <= 8000),
    -- packet is a hand-off's TaskPacket.
    packet           jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX task_activity_by_task ON task_activity (tenant_id, task_id, created_at DESC, id DESC);

CREATE TABLE routines (
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 300),
    schedule         text NOT NULL CHECK (length(schedule) BETWEEN 1 AND 200),
    -- agent_id is the AI employee the routine runs as: each run is a task
    -- assigned to it and one round.
    agent_id         uuid NOT NULL,
    description      text NOT NULL DEFAULT '' CHECK (length(description) <= 20000),
    tags             text[] NOT NULL DEFAULT '{}',
    paused           boolean NOT NULL DEFAULT false,
    next_run_at      timestamptz,
    last_run_at      timestamptz,
    creator_kind     text NOT NULL CHECK (creator_kind IN ('operator', 'employee', 'external', 'system')),
    creator_agent_id uuid,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX routines_by_name ON routines (tenant_id, name);
CREATE INDEX routines_due ON routines (next_run_at) WHERE NOT paused AND next_run_at IS NOT NULL;

CREATE TABLE reminders (
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    agent_id         uuid NOT NULL,
    -- task_id, when set, is the task the reminder's round works on;
    -- otherwise firing it creates a task for it.
    task_id          uuid,
    text             text NOT NULL CHECK (length(text) BETWEEN 1 AND 2000),
    due_at           timestamptz NOT NULL,
    creator_kind     text NOT NULL CHECK (creator_kind IN ('operator', 'employee', 'external', 'system')),
    creator_agent_id uuid,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    fired_at         timestamptz,
    cancelled_at     timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX reminders_due ON reminders (due_at) WHERE fired_at IS NULL AND cancelled_at IS NULL;
CREATE INDEX reminders_recent ON reminders (tenant_id, created_at DESC, id DESC);

-- An ephemeral AI employee lives for one task and is retired (moved to the
-- trash) when that task ends.
CREATE TABLE spawned_agents (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL,
    task_id    uuid NOT NULL,
    spawned_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    retired_at timestamptz,
    PRIMARY KEY (tenant_id, agent_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX spawned_agents_by_task ON spawned_agents (tenant_id, task_id) WHERE retired_at IS NULL;
