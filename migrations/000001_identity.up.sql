-- Tenants, members, agents and keys: the identity domain.
-- Every tenant-owned table is keyed by (tenant_id, id) so no query can reach
-- a row without naming its tenant.

CREATE TABLE tenants (
    id             uuid PRIMARY KEY,
    slug           text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$'),
    name           text NOT NULL,
    settings       jsonb NOT NULL DEFAULT '{}',
    -- policy_version increases with every committed change to a policy input
    -- of this tenant (settings, agents, keys, grants). Replicas reconcile
    -- their live streams against it.
    policy_version bigint NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    email         text NOT NULL CHECK (email = lower(email)),
    role          text NOT NULL CHECK (role IN ('owner', 'admin', 'operator', 'viewer')),
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, email)
);

CREATE TABLE agents (
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    name             text NOT NULL,
    department       text NOT NULL DEFAULT '',
    reports_to       uuid,
    role             text NOT NULL DEFAULT '',
    budget_cents     bigint NOT NULL DEFAULT 0 CHECK (budget_cents >= 0),
    -- capabilities and fork are typed JSON (identity.Capabilities, identity.Fork).
    capabilities     jsonb NOT NULL DEFAULT '{}',
    fork             jsonb NOT NULL DEFAULT '{}',
    -- permissions is NULL when the agent has no [permissions] section
    -- (allow); a document that does not parse refuses permission-gated tools.
    permissions      jsonb,
    settings_version bigint NOT NULL DEFAULT 1,
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'trashed')),
    trashed_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    -- A trashed agent keeps its name reserved until it is purged.
    UNIQUE (tenant_id, name),
    FOREIGN KEY (tenant_id, reports_to) REFERENCES agents (tenant_id, id) ON DELETE SET NULL (reports_to)
);

CREATE TABLE api_keys (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          uuid NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('operator', 'agent')),
    agent_id    uuid,
    name        text NOT NULL,
    secret_hash text NOT NULL,
    scopes      text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    revoked_at  timestamptz,
    PRIMARY KEY (tenant_id, id),
    -- Key ids are globally unique so a token can name its key without its tenant.
    UNIQUE (id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    CHECK ((kind = 'agent') = (agent_id IS NOT NULL))
);
