--[[
  One page of an application's view (getInstallations), in ascending id order, with the view's
  version, read together so a page kept in memory is known by the version it was read at.

  KEYS[1] appView(app)                  sorted set: score installationId, member Installation JSON
  KEYS[2] internalOfApp(app,'viewver')  counter bumped by every change of the view

  ARGV[1] the lowest id excluded ('-inf' for the first page)   ARGV[2] the page's size at most

  Returns { version or "", json, id, json, id, ... } (ZRANGE ... WITHSCORES after the version).
]]
local min = ARGV[1] == '-inf' and '-inf' or ('(' .. ARGV[1])
local page = redis.call('ZRANGE', KEYS[1], min, '+inf', 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]), 'WITHSCORES')
table.insert(page, 1, redis.call('GET', KEYS[2]) or '')
return page
