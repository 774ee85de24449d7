-- The shared journal (shared.py): keep one exchange, bounded by bytes in all, and announce it.
-- ARGV: prefix, id, scope, summary, document, max bytes, instance. Returns the bytes now kept.
local p = ARGV[1]
local ids, sums, docs, scopes, total = p .. "j:ids", p .. "j:sum", p .. "j:doc", p .. "j:scope", p .. "j:bytes"
local id, summary, doc = ARGV[2], ARGV[4], ARGV[5]
redis.call("LPUSH", ids, id)
redis.call("HSET", sums, id, summary)
redis.call("HSET", docs, id, doc)
redis.call("HSET", scopes, id, ARGV[3])
local kept = redis.call("INCRBY", total, string.len(summary) + string.len(doc) + 64)
local limit = tonumber(ARGV[6])
while kept > limit do
  local old = redis.call("RPOP", ids)
  if not old then break end
  local d = redis.call("HGET", docs, old) or ""
  local s = redis.call("HGET", sums, old) or ""
  kept = redis.call("DECRBY", total, string.len(d) + string.len(s) + 64)
  redis.call("HDEL", docs, old)
  redis.call("HDEL", sums, old)
  redis.call("HDEL", scopes, old)
end
redis.call("PUBLISH", p .. "j:live", ARGV[3] .. "\n" .. ARGV[7] .. "\n" .. summary)
return kept
