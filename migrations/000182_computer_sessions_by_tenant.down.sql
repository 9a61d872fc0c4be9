DROP INDEX computer_sessions_newest;
