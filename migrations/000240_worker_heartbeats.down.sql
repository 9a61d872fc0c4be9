DROP TABLE worker_heartbeats;
