-- Computer use: durable workspaces of AI employees (files stored as rows),
-- and the browser sessions workers hold for them.

CREATE TABLE computer_workspaces (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    agent_id      uuid NOT NULL,
    state         text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'expired')),
    data_revision bigint NOT NULL DEFAULT 0 CHECK (data_revision >= 0),
    bytes_used    bigint NOT NULL DEFAULT 0 CHECK (bytes_used >= 0),
    files_used    integer NOT NULL DEFAULT 0 CHECK (files_used >= 0),
    quota         bigint NOT NULL CHECK (quota > 0),
    expires_at    timestamptz NOT NULL,
    -- lease_session is the open session the workspace is attached to.
    lease_session uuid,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX computer_workspaces_by_agent ON computer_workspaces (tenant_id, agent_id, created_at);

CREATE TABLE computer_workspace_files (
    tenant_id    uuid NOT NULL,
    workspace_id uuid NOT NULL,
    path         text NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 512),
    content      bytea NOT NULL CHECK (octet_length(content) <= 49152),
    -- sha256 is NULL for a file whose digest is not known.
    sha256       text,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, workspace_id, path),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES computer_workspaces (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE computer_sessions (
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              uuid NOT NULL,
    agent_id        uuid NOT NULL,
    worker          text NOT NULL DEFAULT '',
    state           text NOT NULL CHECK (state IN ('starting', 'live', 'paused', 'stopped', 'lost')),
    width           integer NOT NULL CHECK (width BETWEEN 320 AND 1920),
    height          integer NOT NULL CHECK (height BETWEEN 240 AND 1200),
    max_actions     integer NOT NULL CHECK (max_actions BETWEEN 1 AND 1000),
    actions_used    integer NOT NULL DEFAULT 0 CHECK (actions_used >= 0 AND actions_used <= max_actions),
    workspace_id    uuid,
    allowed_domains text[] NOT NULL DEFAULT '{}',
    started_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz,
    end_reason      text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

-- One open session per employee.
CREATE UNIQUE INDEX computer_sessions_one_open ON computer_sessions (tenant_id, agent_id)
    WHERE state IN ('starting', 'live', 'paused');
CREATE INDEX computer_sessions_by_worker ON computer_sessions (worker) WHERE state IN ('starting', 'live', 'paused');
