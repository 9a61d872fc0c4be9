DROP INDEX api_keys_creator_member;
ALTER TABLE api_keys DROP COLUMN created_by, DROP COLUMN creator_member;
