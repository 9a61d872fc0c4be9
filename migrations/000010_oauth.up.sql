-- OAuth authorization server, member sessions and round tokens.
-- Nothing here holds a usable secret: codes and tokens are stored by their
-- HMAC signature, session and round-token secrets by SHA-256, client
-- secrets as argon2id hashes.

-- The HMAC key fosite signs codes and tokens with, created on first start
-- when VISOR_OAUTH_HMAC_SECRET is not set, so every replica shares it.
CREATE TABLE oauth_server_secrets (
    id         int PRIMARY KEY CHECK (id = 1),
    secret     bytea NOT NULL CHECK (length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_clients (
    tenant_id                  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                         text NOT NULL CHECK (length(id) BETWEEN 1 AND 2048),
    -- preregistered (admin API), dynamic (RFC 7591) or metadata_document
    -- (an HTTPS URL client_id whose document is cached here).
    kind                       text NOT NULL CHECK (kind IN ('preregistered', 'dynamic', 'metadata_document')),
    name                       text NOT NULL DEFAULT '',
    client_uri                 text NOT NULL DEFAULT '',
    secret_hash                text, -- NULL for public clients
    redirect_uris              text[] NOT NULL,
    grant_types                text[] NOT NULL,
    scopes                     text[] NOT NULL,
    token_endpoint_auth_method text NOT NULL CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
    created_at                 timestamptz NOT NULL DEFAULT now(),
    -- metadata_document only: when the document was last fetched.
    fetched_at                 timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK ((token_endpoint_auth_method = 'none') = (secret_hash IS NULL))
);

-- Authorization codes, PKCE requests, access and refresh tokens, keyed by
-- (kind, signature). request_id names the grant: every token minted from
-- one authorization shares it, so a replayed code or a reused refresh
-- token revokes them together.
CREATE TABLE oauth_tokens (
    tenant_id    uuid NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('code', 'pkce', 'access', 'refresh')),
    signature    text NOT NULL,
    request_id   text NOT NULL,
    client_id    text NOT NULL,
    member_id    uuid NOT NULL,
    active       boolean NOT NULL DEFAULT true,
    -- the fosite request without secrets: scopes, audience, sanitized form, session.
    request      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, kind, signature),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, member_id) REFERENCES members (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_tokens_request ON oauth_tokens (tenant_id, request_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- What a member approved for a client; a request asking for no more than
-- these scopes skips the consent page.
CREATE TABLE oauth_consents (
    tenant_id  uuid NOT NULL,
    member_id  uuid NOT NULL,
    client_id  text NOT NULL,
    scopes     text[] NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, member_id, client_id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES oauth_clients (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, member_id) REFERENCES members (tenant_id, id) ON DELETE CASCADE
);

-- Members' sign-in sessions (dashboard and consent), by SHA-256 of the
-- cookie value.
CREATE TABLE member_sessions (
    tenant_id  uuid NOT NULL,
    id_hash    bytea NOT NULL,
    member_id  uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (id_hash),
    FOREIGN KEY (tenant_id, member_id) REFERENCES members (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX member_sessions_expires ON member_sessions (expires_at);

-- Tokens minted for one round of an agent on one task (employee principal
-- with task_id). The secret is stored as SHA-256: it is 256 random bits.
CREATE TABLE round_tokens (
    tenant_id   uuid NOT NULL,
    id          uuid NOT NULL,
    agent_id    uuid NOT NULL,
    task_id     uuid NOT NULL,
    scopes      text[] NOT NULL DEFAULT '{}',
    secret_hash bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX round_tokens_expires ON round_tokens (expires_at);
