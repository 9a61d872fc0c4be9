DROP INDEX responsibility_wakeups_unreported;
DROP INDEX responsibility_wakeups_open_questions;
ALTER TABLE responsibility_wakeups DROP CONSTRAINT responsibility_wakeups_answer_state;
ALTER TABLE responsibility_wakeups DROP COLUMN reported_at;
ALTER TABLE responsibility_wakeups DROP COLUMN answered_by;
ALTER TABLE responsibility_wakeups DROP COLUMN answer_flags;
ALTER TABLE responsibility_wakeups DROP COLUMN answer;
ALTER TABLE responsibility_wakeups DROP COLUMN flags;
