DROP TABLE round_tokens;
DROP TABLE member_sessions;
DROP TABLE oauth_consents;
DROP TABLE oauth_tokens;
DROP TABLE oauth_clients;
DROP TABLE oauth_server_secrets;
