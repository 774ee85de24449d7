-- The shared journal (shared.py): keep a batch of entries, bounded by bytes in all, and announce them.
-- ARGV: prefix, max bytes, instance, then (id, scope, brief, packed entry) for each exchange (packed.py).
-- Returns the bytes now kept.
local p = ARGV[1]
local ids, briefs, entries, scopes, total = p .. "jk:ids", p .. "jk:brief", p .. "jk:entry", p .. "jk:scope", p .. "jk:bytes"
local limit, instance = tonumber(ARGV[2]), ARGV[3]
local kept = tonumber(redis.call("GET", total) or "0")
for i = 4, #ARGV, 4 do
  local id, scope, brief, entry = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  redis.call("LPUSH", ids, id)
  redis.call("HSET", briefs, id, brief)
  redis.call("HSET", entries, id, entry)
  redis.call("HSET", scopes, id, scope)
  kept = redis.call("INCRBY", total, string.len(brief) + string.len(entry) + 64)
  redis.call("PUBLISH", p .. "jk:live", scope .. "\n" .. instance .. "\n" .. id)
end
while kept > limit do
  local old = redis.call("RPOP", ids)
  if not old then break end
  local e = redis.call("HGET", entries, old) or ""
  local b = redis.call("HGET", briefs, old) or ""
  kept = redis.call("DECRBY", total, string.len(e) + string.len(b) + 64)
  redis.call("HDEL", entries, old)
  redis.call("HDEL", briefs, old)
  redis.call("HDEL", scopes, old)
end
return kept
