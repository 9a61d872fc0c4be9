DROP TABLE api_keys;
DROP TABLE agents;
DROP TABLE members;
DROP TABLE tenants;
