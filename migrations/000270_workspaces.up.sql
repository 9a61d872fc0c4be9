-- Employee workspaces for the file and command tools: one durable tree per
-- AI employee. The tree is kept as a tar.gz snapshot per revision, cut into
-- chunks of at most 1 MiB (workspace_chunks), so a repository of tens of MB
-- is a few dozen rows whatever its file count. A worker holds the lease
-- while a container runs the tree; it renews it, and another worker may
-- take it over once it lapses.

CREATE TABLE workspaces (
    tenant_id      uuid NOT NULL,
    agent_id       uuid NOT NULL,
    id             uuid NOT NULL,
    revision       bigint NOT NULL DEFAULT 0,
    bytes_used     bigint NOT NULL DEFAULT 0,
    files_used     integer NOT NULL DEFAULT 0,
    snapshot_bytes bigint NOT NULL DEFAULT 0,
    quota          bigint NOT NULL CHECK (quota > 0),
    lease_worker   text,
    lease_until    timestamptz,
    last_used_at   timestamptz NOT NULL DEFAULT now(),
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, agent_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX workspaces_by_lease ON workspaces (lease_worker) WHERE lease_worker IS NOT NULL;

CREATE TABLE workspace_chunks (
    tenant_id    uuid NOT NULL,
    workspace_id uuid NOT NULL,
    revision     bigint NOT NULL,
    seq          integer NOT NULL,
    data         bytea NOT NULL,
    PRIMARY KEY (tenant_id, workspace_id, revision, seq),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES workspaces (tenant_id, id) ON DELETE CASCADE
);

-- Tracked multi-step tasks (task_manage): state only, per employee.
CREATE TABLE workspace_tasks (
    tenant_id     uuid NOT NULL,
    agent_id      uuid NOT NULL,
    id            uuid NOT NULL,
    title         text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    state         text NOT NULL CHECK (state IN ('active', 'blocked', 'review', 'completed')),
    board_task_id uuid,
    body          jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX workspace_tasks_by_agent ON workspace_tasks (tenant_id, agent_id, updated_at DESC);

-- Published artifacts: immutable bytes with a digest. A download link is
-- a random token whose SHA-256 is kept, with its expiry.
CREATE TABLE workspace_artifacts (
    tenant_id  uuid NOT NULL,
    agent_id   uuid NOT NULL,
    id         uuid NOT NULL,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    media_type text NOT NULL,
    sha256     text NOT NULL,
    size       bigint NOT NULL,
    content    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX workspace_artifacts_by_agent ON workspace_artifacts (tenant_id, agent_id, created_at DESC);

CREATE TABLE workspace_artifact_links (
    token_sha256 text PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    artifact_id  uuid NOT NULL,
    expires_at   timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, artifact_id) REFERENCES workspace_artifacts (tenant_id, id) ON DELETE CASCADE
);

-- Skills: versions of a folder holding SKILL.md, kept as tar.gz; one
-- version per (employee, name) is active. Environment values are sealed.
CREATE TABLE workspace_skills (
    tenant_id   uuid NOT NULL,
    agent_id    uuid NOT NULL,
    name        text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
    version     integer NOT NULL,
    active      boolean NOT NULL DEFAULT false,
    description text NOT NULL DEFAULT '',
    sha256      text NOT NULL,
    size        bigint NOT NULL,
    content     bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, name, version),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);

CREATE UNIQUE INDEX workspace_skills_one_active ON workspace_skills (tenant_id, agent_id, name) WHERE active;

CREATE TABLE workspace_skill_env (
    tenant_id    uuid NOT NULL,
    agent_id     uuid NOT NULL,
    skill        text NOT NULL,
    name         text NOT NULL CHECK (name ~ '^[A-Z_][A-Z0-9_]{0,63}$'),
    sealed_value text NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, skill, name),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
