DROP TABLE workspace_skill_env;
DROP TABLE workspace_skills;
DROP TABLE workspace_artifact_links;
DROP TABLE workspace_artifacts;
DROP TABLE workspace_tasks;
DROP TABLE workspace_chunks;
DROP TABLE workspaces;
