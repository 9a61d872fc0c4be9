DROP TABLE grants;
DROP TABLE capability_requests;
