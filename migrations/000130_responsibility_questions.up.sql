-- Questions to operators and what the next run is told about them: the
-- rules of the injection scan a question matched, the operator's answer,
-- and when the answer (or the news that the question expired or was
-- withdrawn) reached a run of the employee.

ALTER TABLE responsibility_wakeups ADD COLUMN flags text[] NOT NULL DEFAULT '{}' CHECK (cardinality(flags) <= 16);
ALTER TABLE responsibility_wakeups ADD COLUMN answer text NOT NULL DEFAULT '' CHECK (length(answer) <= 4000);
ALTER TABLE responsibility_wakeups ADD COLUMN answer_flags text[] NOT NULL DEFAULT '{}' CHECK (cardinality(answer_flags) <= 16);
ALTER TABLE responsibility_wakeups ADD COLUMN answered_by text NOT NULL DEFAULT '';
-- reported_at: when a run was handed the outcome of a settled question;
-- NULL while the next run has yet to hear of it.
ALTER TABLE responsibility_wakeups ADD COLUMN reported_at timestamptz;
ALTER TABLE responsibility_wakeups ADD CONSTRAINT responsibility_wakeups_answer_state
    CHECK ((state = 'answered') = (answered_by <> ''));

-- Operators list the open questions of a tenant, oldest first.
CREATE INDEX responsibility_wakeups_open_questions ON responsibility_wakeups (tenant_id, created_at, id)
    WHERE kind = 'question' AND state = 'pending';
-- What the next run must be told.
CREATE INDEX responsibility_wakeups_unreported ON responsibility_wakeups (tenant_id, responsibility_id)
    WHERE kind = 'question' AND state <> 'pending' AND reported_at IS NULL;
