-- Knowledge: what AI employees remember (memories with their key facts),
-- their wikis and the tenant's shared wiki, hand-offs between rounds, and
-- beliefs with their settlements. Every write names its source: the round,
-- responsibility run or single call its credential stands for. An operator
-- can forget a source; its row then stays as a tombstone so that later
-- writes from it are refused, and the ids of the memories removed with it
-- are kept so that a write naming one as a parent is refused the same way.

-- Character trigrams find Japanese (and any text without spaces) that the
-- full-text parser cannot split into words.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE knowledge_sources (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key          text NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 200),
    kind         text NOT NULL CHECK (kind IN ('round', 'run', 'call')),
    agent_id     uuid,
    task_id      uuid,
    principal    text NOT NULL CHECK (octet_length(principal) <= 512),
    created_at   timestamptz NOT NULL DEFAULT now(),
    forgotten_at timestamptz,
    forgotten_by text NOT NULL DEFAULT '' CHECK (octet_length(forgotten_by) <= 512),
    PRIMARY KEY (tenant_id, key)
);
CREATE INDEX knowledge_sources_by_agent ON knowledge_sources (tenant_id, agent_id, created_at DESC);

CREATE TABLE memories (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         uuid NOT NULL,
    agent_id   uuid NOT NULL,
    layer      text NOT NULL CHECK (layer IN ('episodic', 'semantic', 'procedural', 'profile', 'decision')),
    subject    text NOT NULL DEFAULT '' CHECK (octet_length(subject) <= 400),
    content    text NOT NULL CHECK (octet_length(content) BETWEEN 1 AND 16384),
    source_key text NOT NULL,
    parents    uuid[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('english', subject || ' ' || content)) STORED,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX memories_by_agent ON memories (tenant_id, agent_id, layer, created_at DESC);
-- What ranking an employee's memories by full text reads, so that it is an
-- index-only scan rather than a visit to each of the employee's rows.
CREATE INDEX memories_rank ON memories (tenant_id, agent_id) INCLUDE (id, created_at, layer, tsv);
CREATE INDEX memories_tsv ON memories USING gin (tsv);
CREATE INDEX memories_trgm ON memories USING gin (content gin_trgm_ops);

CREATE TABLE memory_facts (
    tenant_id uuid NOT NULL,
    memory_id uuid NOT NULL,
    ord       integer NOT NULL,
    fact      text NOT NULL CHECK (octet_length(fact) BETWEEN 1 AND 1000),
    PRIMARY KEY (tenant_id, memory_id, ord),
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE
);

-- A memory's sources: its own write's, and (inherited) every source of the
-- memories it was derived from, so forgetting a source reaches them too.
CREATE TABLE memory_sources (
    tenant_id  uuid NOT NULL,
    memory_id  uuid NOT NULL,
    source_key text NOT NULL,
    inherited  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, memory_id, source_key),
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, source_key) REFERENCES knowledge_sources (tenant_id, key) ON DELETE CASCADE
);
CREATE INDEX memory_sources_by_source ON memory_sources (tenant_id, source_key);

CREATE TABLE forgotten_memories (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    memory_id    uuid NOT NULL,
    source_key   text NOT NULL,
    forgotten_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, memory_id)
);

-- agent_id NULL is the tenant's shared wiki. host_sources holds the
-- sources of the newest writes, newest first (at most 20).
CREATE TABLE wiki_pages (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           uuid NOT NULL,
    agent_id     uuid,
    path         text NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 200),
    content      text NOT NULL CHECK (octet_length(content) <= 65536),
    host_sources text[] NOT NULL DEFAULT '{}',
    updated_by   text NOT NULL DEFAULT '',
    revision     integer NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX wiki_pages_path
    ON wiki_pages (tenant_id, COALESCE(agent_id, '00000000-0000-0000-0000-000000000000'::uuid), path);
CREATE INDEX wiki_pages_host_sources ON wiki_pages USING gin (host_sources);

-- The newest hand-off of an employee on a task; the next round of that
-- employee on that task carries it as data.
CREATE TABLE handoffs (
    tenant_id  uuid NOT NULL,
    agent_id   uuid NOT NULL,
    task_id    uuid NOT NULL,
    status     text NOT NULL DEFAULT '' CHECK (status IN ('', 'continue', 'complete', 'blocked')),
    body       jsonb NOT NULL,
    bytes      integer NOT NULL,
    source_key text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, agent_id, task_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, source_key) REFERENCES knowledge_sources (tenant_id, key) ON DELETE CASCADE
);

CREATE TABLE beliefs (
    tenant_id     uuid NOT NULL,
    id            uuid NOT NULL,
    agent_id      uuid NOT NULL,
    subject       text NOT NULL CHECK (octet_length(subject) BETWEEN 1 AND 200),
    claim         text NOT NULL CHECK (octet_length(claim) BETWEEN 1 AND 2000),
    probability   double precision NOT NULL CHECK (probability >= 0 AND probability <= 1),
    source_key    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    settled_at    timestamptz,
    outcome       boolean,
    settle_source text CHECK (settle_source IN ('agent_unverified', 'platform_verified')),
    settled_by    text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, source_key) REFERENCES knowledge_sources (tenant_id, key) ON DELETE CASCADE
);
CREATE INDEX beliefs_by_agent ON beliefs (tenant_id, agent_id, created_at DESC);
