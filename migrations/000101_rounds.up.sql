-- Rounds: a wake-up is one round of one AI employee on one task, delivered
-- to the employee's runtime by webhook (push) or handed out to a long-poll
-- (pull). Runtime endpoints say where pushes go, per employee or for the
-- whole tenant.

CREATE TABLE wakeups (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           uuid NOT NULL,
    agent_id     uuid NOT NULL,
    task_id      uuid NOT NULL,
    reason       text NOT NULL CHECK (reason IN ('routine', 'reminder', 'message', 'assigned', 'unblocked', 'handoff')),
    -- data holds text another party wrote ({label, author, text} objects),
    -- delivered fenced, never as instructions.
    data         jsonb NOT NULL DEFAULT '[]',
    -- queued: a delivery job is pending; ready: waiting for a long-poll;
    -- handed_out: a long-poll took it; delivered: a webhook accepted it;
    -- dead: every attempt failed; cancelled: nothing left to deliver.
    state        text NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'ready', 'handed_out', 'delivered', 'dead', 'cancelled')),
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX wakeups_ready ON wakeups (tenant_id, agent_id, created_at) WHERE state = 'ready';
CREATE INDEX wakeups_by_state ON wakeups (tenant_id, state, created_at DESC, id DESC);

CREATE TABLE runtime_endpoints (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         uuid NOT NULL,
    -- agent_id NULL is the tenant's default endpoint.
    agent_id   uuid,
    url        text NOT NULL CHECK (length(url) BETWEEN 1 AND 2000),
    -- secret signs deliveries (HMAC-SHA256); it is a signing key, so it is
    -- kept, and shown to the operator only when it is created.
    secret     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE UNIQUE INDEX runtime_endpoints_one_per_scope
    ON runtime_endpoints (tenant_id, COALESCE(agent_id, '00000000-0000-0000-0000-000000000000'::uuid));
