-- The shared journal (shared.py): keep a batch of exchanges, bounded by bytes in all, and announce them.
-- ARGV: prefix, max bytes, instance, then (id, scope, summary, document) for each exchange.
-- Returns the bytes now kept.
local p = ARGV[1]
local ids, sums, docs, scopes, total = p .. "j:ids", p .. "j:sum", p .. "j:doc", p .. "j:scope", p .. "j:bytes"
local limit, instance = tonumber(ARGV[2]), ARGV[3]
local kept = tonumber(redis.call("GET", total) or "0")
for i = 4, #ARGV, 4 do
  local id, scope, summary, doc = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  redis.call("LPUSH", ids, id)
  redis.call("HSET", sums, id, summary)
  redis.call("HSET", docs, id, doc)
  redis.call("HSET", scopes, id, scope)
  kept = redis.call("INCRBY", total, string.len(summary) + string.len(doc) + 64)
  redis.call("PUBLISH", p .. "j:live", scope .. "\n" .. instance .. "\n" .. summary)
end
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
return kept
