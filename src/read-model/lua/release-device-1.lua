--[[
  Forgets a device's index entry if it still points at the given installation (a device that
  moved elsewhere meanwhile keeps its entry).
  KEYS[1] internal('{d<category>:<id>}', 'own')   string '<inst>;<last>;<prev>;<removed>'
  ARGV[1] installationId
  Returns 1 when the entry was removed, 0 otherwise.
]]
local entry = redis.call('GET', KEYS[1])
if entry and string.match(entry, '^([^;]*);') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
