-- The dashboard's log of script runs (execute_program): who ran what
-- image and language, and how it ended. Neither the script nor its output
-- is kept; each tenant keeps its newest 1,000 runs.
CREATE TABLE sandbox_runs (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         uuid NOT NULL,
    principal  text NOT NULL CHECK (octet_length(principal) <= 512),
    agent_id   uuid,
    image      text NOT NULL CHECK (octet_length(image) <= 512),
    language   text NOT NULL CHECK (language IN ('python', 'sh')),
    state      text NOT NULL CHECK (state IN ('running', 'finished', 'unavailable', 'failed', 'cancelled')),
    exit_code  integer NOT NULL DEFAULT 0,
    timed_out  boolean NOT NULL DEFAULT false,
    oom_killed boolean NOT NULL DEFAULT false,
    on_host    boolean NOT NULL DEFAULT false,
    run_ms     bigint NOT NULL DEFAULT 0 CHECK (run_ms >= 0),
    waited_ms  bigint NOT NULL DEFAULT 0 CHECK (waited_ms >= 0),
    worker     text NOT NULL DEFAULT '' CHECK (octet_length(worker) <= 512),
    detail     text NOT NULL DEFAULT '' CHECK (octet_length(detail) <= 2048),
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX sandbox_runs_newest ON sandbox_runs (tenant_id, started_at DESC, id DESC);
CREATE INDEX sandbox_runs_running ON sandbox_runs (tenant_id, started_at DESC) WHERE state = 'running';
