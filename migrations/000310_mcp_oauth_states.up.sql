-- A member's pending Connect to an upstream server that needs the OAuth
-- authorization code flow: the state parameter (kept as its SHA-256), the
-- dashboard session it is bound to (also a SHA-256), and the PKCE verifier
-- sealed (services/secrets). A row is taken once, by the callback, and
-- only before it expires.
CREATE TABLE mcp_oauth_states (
    tenant_id       uuid NOT NULL,
    state_hash      text NOT NULL,
    server_id       uuid NOT NULL,
    member_id       uuid NOT NULL,
    token_member_id uuid NOT NULL,
    session_hash    text NOT NULL,
    sealed_verifier text NOT NULL,
    redirect_uri    text NOT NULL CHECK (length(redirect_uri) <= 2000),
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, state_hash),
    FOREIGN KEY (tenant_id, server_id) REFERENCES mcp_servers (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX mcp_oauth_states_expiry ON mcp_oauth_states (expires_at);
