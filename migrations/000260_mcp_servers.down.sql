DROP TABLE mcp_server_tokens;
DROP TABLE mcp_server_tools;
DROP TABLE mcp_server_secrets;
DROP TABLE mcp_servers;
