DROP TABLE runtime_endpoints;
DROP TABLE wakeups;
