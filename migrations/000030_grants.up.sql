-- Scoped grants: an agent's capabilities.scoped_tools stay hidden until a
-- live grant for that agent names the tool. capability_requests hold what
-- AI employees asked for; an operator approves (creating a grant) or denies.

CREATE TABLE capability_requests (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    agent_id      uuid NOT NULL,
    -- tool is the name the agent asked for.
    tool          text NOT NULL CHECK (length(tool) BETWEEN 1 AND 200),
    reason        text NOT NULL CHECK (length(reason) BETWEEN 1 AND 2000),
    task_id       uuid,
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    decided_at    timestamptz,
    decided_by    text NOT NULL DEFAULT '',
    decision_note text NOT NULL DEFAULT '',
    grant_id      uuid,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    CHECK ((status = 'pending') = (decided_at IS NULL))
);

-- One open request per agent and tool: asking again while pending is a conflict.
CREATE UNIQUE INDEX capability_requests_one_pending
    ON capability_requests (tenant_id, agent_id, tool) WHERE status = 'pending';

CREATE TABLE grants (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         uuid NOT NULL,
    agent_id   uuid NOT NULL,
    -- tool is an allowed_tools-style entry: a name, a trailing-* prefix, or
    -- an mcp__<server>__ form, matched by the same rule as allowed_tools.
    tool       text NOT NULL CHECK (length(tool) BETWEEN 1 AND 200),
    request_id uuid,
    -- task_id, when set, ends the grant at every terminal state of the task.
    task_id    uuid,
    granted_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    ended_at   timestamptz,
    end_reason text NOT NULL DEFAULT '' CHECK (end_reason IN ('', 'revoked', 'expired', 'task_ended')),
    ended_by   text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    CHECK ((ended_at IS NULL) = (end_reason = ''))
);

CREATE INDEX grants_live ON grants (tenant_id, agent_id) WHERE ended_at IS NULL;
CREATE INDEX grants_due ON grants (expires_at) WHERE ended_at IS NULL AND expires_at IS NOT NULL;
CREATE INDEX grants_task ON grants (tenant_id, task_id) WHERE ended_at IS NULL AND task_id IS NOT NULL;
