-- Keys record who made them. A key a member made (directly, or through a
-- key that member made) stands on that member's authority: it never acts
-- beyond the member's current role and is revoked when the member is
-- removed. Keys made by the platform token or the CLI have no member.
ALTER TABLE api_keys
    ADD COLUMN created_by text NOT NULL DEFAULT '',
    ADD COLUMN creator_member uuid;

CREATE INDEX api_keys_creator_member ON api_keys (tenant_id, creator_member) WHERE creator_member IS NOT NULL;

-- A key's scopes now bind it everywhere. Keys made without scopes keep what
-- they could do until now: an operator key used the admin API without
-- limit (and saw no tools), an agent key called every tool its settings
-- allowed.
UPDATE api_keys SET scopes = '{admin:write}' WHERE kind = 'operator' AND scopes = '{}';
UPDATE api_keys SET scopes = '{tools:admin,tools:read,tools:write}' WHERE kind = 'agent' AND scopes = '{}';
