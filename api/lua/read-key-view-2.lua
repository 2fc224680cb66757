--[[
  One API key's view with the generation of the write that set it (write-key-view-2.lua), read
  together so a view kept in memory is known by the generation it was read at.

  KEYS[1] keyView(keyHash)             hash: app, exp, i:<installationId> -> Installation JSON
  KEYS[2] keyViewGeneration(keyHash)   string: generation of the write that set the view

  Returns { generation or "", field, value, ... } (the view's HGETALL after the generation).
]]
local view = redis.call('HGETALL', KEYS[1])
table.insert(view, 1, redis.call('GET', KEYS[2]) or '')
return view
