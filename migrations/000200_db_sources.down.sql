DROP TABLE db_sources;
