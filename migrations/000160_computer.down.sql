DROP TABLE computer_sessions;
DROP TABLE computer_workspace_files;
DROP TABLE computer_workspaces;
