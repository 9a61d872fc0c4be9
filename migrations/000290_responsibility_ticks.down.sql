-- Ticks held on rows are dropped with the column: each responsibility's
-- schedule takes effect again at its next change (the older worker arms a
-- tick job then).
DROP INDEX responsibilities_due_ticks;
ALTER TABLE responsibilities DROP COLUMN next_tick_at;
