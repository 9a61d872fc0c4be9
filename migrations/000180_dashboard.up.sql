-- The operator dashboard: its actions join the audit trail with their own
-- source, and each member's language choice is kept.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_source_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_source_check
    CHECK (source IN ('mcp', 'admin_api', 'cli', 'dashboard'));

CREATE TABLE member_languages (
    tenant_id  uuid NOT NULL,
    member_id  uuid NOT NULL,
    language   text NOT NULL CHECK (language IN ('en', 'ja')),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, member_id),
    FOREIGN KEY (tenant_id, member_id) REFERENCES members (tenant_id, id) ON DELETE CASCADE
);
