DROP INDEX responsibility_runs_recent;
DROP TABLE responsibility_skips;
ALTER TABLE responsibility_runs DROP COLUMN reports;
ALTER TABLE responsibility_runs DROP COLUMN wakeup_id;
DELETE FROM wakeups WHERE reason = 'responsibility';
ALTER TABLE wakeups DROP CONSTRAINT wakeups_reason_check;
ALTER TABLE wakeups ADD CONSTRAINT wakeups_reason_check
    CHECK (reason IN ('routine', 'reminder', 'message', 'assigned', 'unblocked', 'handoff'));
UPDATE tasks SET origin = 'direct' WHERE origin = 'responsibility';
ALTER TABLE tasks DROP CONSTRAINT tasks_origin_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_origin_check
    CHECK (origin IN ('direct', 'routine', 'reminder', 'message', 'spawn'));
