-- Database sources: a tenant's databases its AI employees may read through
-- the db_* tools. The password is sealed (services/secrets) and bound to
-- the row; everything else of the connection string is kept plain.

CREATE TABLE db_sources (
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                uuid NOT NULL,
    name              text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_-]{0,62}$'),
    driver            text NOT NULL CHECK (driver IN ('postgres', 'mysql')),
    host              text NOT NULL CHECK (length(host) BETWEEN 1 AND 255),
    port              integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    database          text NOT NULL CHECK (length(database) BETWEEN 1 AND 63),
    username          text NOT NULL CHECK (length(username) BETWEEN 1 AND 63),
    sslmode           text NOT NULL,
    sealed_password   text NOT NULL DEFAULT '',
    schemas           text[] NOT NULL DEFAULT '{}',
    tables            text[] NOT NULL DEFAULT '{}',
    statement_timeout_ms integer NOT NULL CHECK (statement_timeout_ms > 0),
    max_rows          integer NOT NULL CHECK (max_rows > 0),
    max_bytes         integer NOT NULL CHECK (max_bytes > 0),
    max_concurrent    integer NOT NULL CHECK (max_concurrent > 0),
    description       text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    created_by        text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);
