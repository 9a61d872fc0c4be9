DROP TABLE spawned_agents;
DROP TABLE reminders;
DROP TABLE routines;
DROP TABLE task_activity;
DROP TABLE tasks;
