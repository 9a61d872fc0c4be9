-- Upstream MCP servers: the other MCP servers a tenant's callers reach
-- through the mcp_tool_* entry points. A server is remote (Streamable HTTP
-- or the older HTTP+SSE) or stdio (a command run in a container on a
-- worker). Secrets (environment values, static headers, OAuth client
-- secrets, upstream tokens) are sealed (services/secrets) and bound to
-- their row; only their names are ever shown.

CREATE TABLE mcp_servers (
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    name             text NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{0,31}$'),
    transport        text NOT NULL CHECK (transport IN ('streamable_http', 'sse', 'stdio')),
    url              text NOT NULL DEFAULT '' CHECK (length(url) <= 2000),
    image            text NOT NULL DEFAULT '' CHECK (length(image) <= 255),
    command          text[] NOT NULL DEFAULT '{}',
    allow_hosts      text[] NOT NULL DEFAULT '{}',
    auth             jsonb NOT NULL DEFAULT '{}',
    enabled          boolean NOT NULL DEFAULT true,
    timeout_ms       integer NOT NULL CHECK (timeout_ms > 0),
    max_concurrent   integer NOT NULL CHECK (max_concurrent > 0),
    max_result_bytes integer NOT NULL CHECK (max_result_bytes > 0),
    description      text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    version          bigint NOT NULL DEFAULT 1,
    refreshed_at     timestamptz,
    last_error       text NOT NULL DEFAULT '',
    created_by       text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

-- One sealed value per (server, kind, name): an environment variable of a
-- stdio server, a static header of a remote one, or the OAuth client
-- secret.
CREATE TABLE mcp_server_secrets (
    tenant_id  uuid NOT NULL,
    server_id  uuid NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('env', 'header', 'client_secret')),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    sealed     text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, server_id, kind, name),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_servers (tenant_id, id) ON DELETE CASCADE
);

-- The tools a server listed at its last refresh; what search reads.
CREATE TABLE mcp_server_tools (
    tenant_id     uuid NOT NULL,
    server_id     uuid NOT NULL,
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    title         text NOT NULL DEFAULT '',
    description   text NOT NULL DEFAULT '',
    input_schema  jsonb NOT NULL DEFAULT '{}',
    output_schema jsonb,
    annotations   jsonb,
    PRIMARY KEY (tenant_id, server_id, name),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_servers (tenant_id, id) ON DELETE CASCADE
);

-- Tokens Visor holds as an OAuth client of a server: the tenant's own
-- (member_id is the nil uuid) or one member's.
CREATE TABLE mcp_server_tokens (
    tenant_id      uuid NOT NULL,
    server_id      uuid NOT NULL,
    member_id      uuid NOT NULL,
    sealed_access  text NOT NULL,
    sealed_refresh text NOT NULL DEFAULT '',
    expires_at     timestamptz,
    scope          text NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, server_id, member_id),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_servers (tenant_id, id) ON DELETE CASCADE
);
