DROP TABLE mcp_oauth_states;
