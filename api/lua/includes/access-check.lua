-- The access check of the API's per-installation scripts: KEYS[1] acl(installationId), KEYS[2]
-- installation(installationId), ARGV[1] the key's applicationId (the caller checked the key's
-- status: live, not expired, its application enabled). Returns nil from the script unless the
-- application may read the installation and it exists. Both checks always run, so "missing"
-- and "not yours" cost the same.
local granted = (tonumber(redis.call('HGET', KEYS[1], ARGV[1])) or 0) > 0
local exists = redis.call('EXISTS', KEYS[2]) == 1
if not (granted and exists) then return nil end
