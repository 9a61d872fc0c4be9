DROP INDEX audit_events_principal_time;
DROP TRIGGER audit_facet_hours_update ON audit_events;
DROP TRIGGER audit_facet_hours_insert ON audit_events;
DROP FUNCTION audit_facet_hours_update();
DROP FUNCTION audit_facet_hours_insert();
DROP TABLE audit_facet_folds;
DROP TABLE audit_facet_hours;
