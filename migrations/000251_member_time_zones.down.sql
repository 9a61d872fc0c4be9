DROP TABLE member_time_zones;
