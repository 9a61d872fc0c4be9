DROP INDEX round_tokens_by_task;
DROP TRIGGER wakeups_ready_notify ON wakeups;
DROP FUNCTION wakeups_notify_ready();
DROP INDEX wakeups_by_task;
ALTER TABLE wakeups DROP COLUMN due_at;
