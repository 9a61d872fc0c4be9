DROP TABLE agent_name_reservations;
