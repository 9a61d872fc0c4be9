DROP TABLE responsibility_wakeups;
DROP TABLE responsibility_runs;
DROP TABLE responsibilities;
