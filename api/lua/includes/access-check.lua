-- The access check of the API's scripts: KEYS[1] acl(installationId), KEYS[2]
-- installation(installationId), ARGV[1] keyHash, ARGV[2] now (epoch ms). Returns nil from the
-- script unless the key holds a live grant and the installation exists. Both checks always run,
-- so "missing" and "not yours" cost the same. The acl entry is also the key's proof of life:
-- the consumers remove it in the same MULTI as the key view whenever the key, its application
-- or its access ends, and it carries the key's expiry, so the API reads the key view only
-- after a nil, to tell 401 from 404.
local exp = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
local exists = redis.call('EXISTS', KEYS[2]) == 1
local granted = exp == 0 or (exp ~= nil and exp > tonumber(ARGV[2]))
if not (granted and exists) then return nil end
