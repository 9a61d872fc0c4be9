-- Counts of the audit trail by hour and by the values the dashboard's
-- facets show, so counting a range of a large trail reads a few rows an
-- hour instead of every row. Each statement that writes audit rows appends
-- its own counts (deltas, no unique key: concurrent commits never wait on
-- one another's counts), and a completion (pending to its outcome) moves
-- its row from one count to another. Readers sum the deltas; rows of past
-- hours are folded into one per key from time to time.
CREATE TABLE audit_facet_hours (
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    hour           timestamptz NOT NULL,
    source         text NOT NULL,
    principal_kind text NOT NULL,
    outcome        text NOT NULL,
    tool           text NOT NULL,
    event_type     text NOT NULL,
    n              bigint NOT NULL
);

CREATE INDEX audit_facet_hours_tenant ON audit_facet_hours (tenant_id, hour);

CREATE FUNCTION audit_facet_hours_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_facet_hours (tenant_id, hour, source, principal_kind, outcome, tool, event_type, n)
    SELECT tenant_id, date_trunc('hour', at, 'UTC'), source, principal_kind, outcome, tool, event_type, count(*)
    FROM new_rows GROUP BY 1, 2, 3, 4, 5, 6, 7;
    RETURN NULL;
END $$;

CREATE FUNCTION audit_facet_hours_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_facet_hours (tenant_id, hour, source, principal_kind, outcome, tool, event_type, n)
    SELECT tenant_id, hour, source, principal_kind, outcome, tool, event_type, sum(n) FROM (
        SELECT tenant_id, date_trunc('hour', at, 'UTC') AS hour, source, principal_kind, outcome, tool, event_type, -1 AS n FROM old_rows
        UNION ALL
        SELECT tenant_id, date_trunc('hour', at, 'UTC'), source, principal_kind, outcome, tool, event_type, 1 FROM new_rows
    ) d GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(n) <> 0;
    RETURN NULL;
END $$;

CREATE TRIGGER audit_facet_hours_insert AFTER INSERT ON audit_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_facet_hours_insert();
CREATE TRIGGER audit_facet_hours_update AFTER UPDATE ON audit_events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_facet_hours_update();

INSERT INTO audit_facet_hours (tenant_id, hour, source, principal_kind, outcome, tool, event_type, n)
SELECT tenant_id, date_trunc('hour', at, 'UTC'), source, principal_kind, outcome, tool, event_type, count(*)
FROM audit_events GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- An employee's page reads that employee's newest rows; without an index
-- that leads with the principal, one with few calls walks the whole trail.
CREATE INDEX audit_events_principal_time ON audit_events (tenant_id, principal_id, at DESC, id DESC);

-- How far each tenant's counts are folded: hours before it hold one row
-- per key (plus any completion's deltas since).
CREATE TABLE audit_facet_folds (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    through   timestamptz NOT NULL
);
