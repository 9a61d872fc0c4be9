-- The latest masked screenshot of each open computer-use session, for the
-- dashboard: one row per session, overwritten by each screenshot, deleted
-- when the session ends.
CREATE TABLE computer_session_screenshots (
    tenant_id    uuid NOT NULL,
    session_id   uuid NOT NULL,
    png          bytea NOT NULL CHECK (octet_length(png) BETWEEN 1 AND 2097152),
    width        integer NOT NULL,
    height       integer NOT NULL,
    masked       integer NOT NULL DEFAULT 0 CHECK (masked >= 0),
    fully_masked text NOT NULL DEFAULT '',
    taken_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES computer_sessions (tenant_id, id) ON DELETE CASCADE
);
