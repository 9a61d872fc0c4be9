DROP TABLE IF EXISTS member_languages;
DELETE FROM audit_events WHERE source = 'dashboard';
ALTER TABLE audit_events DROP CONSTRAINT audit_events_source_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_source_check
    CHECK (source IN ('mcp', 'admin_api', 'cli'));
