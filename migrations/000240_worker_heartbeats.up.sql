-- Every running job worker beats here about once a second. A worker whose
-- beat is a few seconds old is lost: another worker deletes its row and, in
-- the same statement, puts the River jobs it was running back to work.
-- Workers are the deployment's, not a tenant's: the table has no tenant_id.
CREATE TABLE worker_heartbeats (
    id         text PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    beat_at    timestamptz NOT NULL DEFAULT now()
);
