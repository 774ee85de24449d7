-- Entries of the session store in Redis, one atomic step per call (see redis_entries.py).
-- KEYS[1]: the entry (a list of JSON documents). ARGV: op, session, ttl ms, session bytes,
-- total bytes, key prefix, then the op's own arguments.
-- Bookkeeping, all under the prefix: size (hash entry -> bytes), owner (hash entry -> session),
-- lru (zset of every entry by last use), s:<session> (zset of a session's entries),
-- ssize (hash session -> bytes), total (bytes), t:<entry> (tombstone of an evicted entry).
local E, op, sess = KEYS[1], ARGV[1], ARGV[2]
local ttl, smax, tmax, P = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function drop(e, tomb)
  local size = redis.call('HGET', P .. 'size', e)
  if size then  -- accounted (account() sets size, owner and lru together; only drop() takes them away)
    size = tonumber(size)
    local owner = redis.call('HGET', P .. 'owner', e)
    redis.call('HDEL', P .. 'size', e)
    redis.call('HDEL', P .. 'owner', e)
    redis.call('ZREM', P .. 'lru', e)
    if owner then
      redis.call('ZREM', P .. 's:' .. owner, e)
      if redis.call('HINCRBY', P .. 'ssize', owner, -size) <= 0 then redis.call('HDEL', P .. 'ssize', owner) end
    end
    redis.call('DECRBY', P .. 'total', size)
  end
  redis.call('DEL', e)
  if tomb then redis.call('SET', P .. 't:' .. e, '1', 'PX', ttl) end
end

local function expire()  -- the least recently used first: a bounded sweep per write
  for _, e in ipairs(redis.call('ZRANGEBYSCORE', P .. 'lru', '-inf', now - ttl, 'LIMIT', 0, 64)) do drop(e, false) end
end

local function alive(e)  -- present and not expired (an expired entry is dropped)
  local score = redis.call('ZSCORE', P .. 'lru', e)
  if not score then return false end
  if tonumber(score) <= now - ttl then drop(e, false) return false end
  return true
end

local function touch(e)
  redis.call('ZADD', P .. 'lru', now, e)
  redis.call('ZADD', P .. 's:' .. sess, now, e)
  redis.call('PEXPIRE', e, ttl + 60000)  -- gone from Redis even if no proxy sweeps again
end

local function account(e, delta)
  redis.call('HINCRBY', P .. 'size', e, delta)
  redis.call('HSET', P .. 'owner', e, sess)
  redis.call('HINCRBY', P .. 'ssize', sess, delta)
  redis.call('INCRBY', P .. 'total', delta)
  touch(e)
end

local function oldest_but(zset, keep)
  local two = redis.call('ZRANGE', zset, 0, 1)
  if two[1] == keep then return two[2] end
  return two[1]
end

local function evict(keep)
  while tonumber(redis.call('HGET', P .. 'ssize', sess) or '0') > smax do
    local victim = oldest_but(P .. 's:' .. sess, keep)
    if not victim then break end
    drop(victim, true)
  end
  while tonumber(redis.call('GET', P .. 'total') or '0') > tmax do
    local victim = oldest_but(P .. 'lru', keep)
    if not victim then break end
    drop(victim, true)
  end
end

local function absent()
  if redis.call('EXISTS', P .. 't:' .. E) == 1 then return {2} end
  return {0}
end

if op == 'get' or op == 'tail' then
  if not alive(E) then return absent() end
  touch(E)
  local count = tonumber(ARGV[7] or '-1')
  local docs
  if op == 'get' or count < 0 then docs = redis.call('LRANGE', E, 0, -1)
  elseif count == 0 then docs = {}
  else docs = redis.call('LRANGE', E, -count, -1) end
  table.insert(docs, 1, 1)
  return docs
end

if op == 'put' then
  local size = 0
  for i = 7, #ARGV do size = size + #ARGV[i] end
  if size > smax then return {-1, size} end  -- refused: what the entry held stays as it was
  drop(E, false)
  redis.call('DEL', P .. 't:' .. E)
  expire()
  for i = 7, #ARGV do redis.call('RPUSH', E, ARGV[i]) end
  account(E, size)
  evict(E)
  return {1}
end

if op == 'append' then
  local doc, keep, fresh = ARGV[7], tonumber(ARGV[8]), ARGV[9] == '1'
  if not alive(E) then
    if not fresh and redis.call('EXISTS', P .. 't:' .. E) == 1 then return {2} end
    redis.call('DEL', E)
    redis.call('DEL', P .. 't:' .. E)
  end
  expire()
  -- Measured before anything changes: a refused append leaves the entry as it was.
  local grown, surplus = #doc, 0
  if keep > 0 then
    surplus = redis.call('LLEN', E) + 1 - keep
    if surplus > 0 then
      for _, d in ipairs(redis.call('LRANGE', E, 0, surplus - 1)) do grown = grown - #d end
    end
  end
  local size = tonumber(redis.call('HGET', P .. 'size', E) or '0') + grown
  if size > smax then return {-1, size} end
  redis.call('RPUSH', E, doc)
  for _ = 1, surplus do redis.call('LPOP', E) end
  account(E, grown)
  evict(E)
  return {1}
end

if op == 'pop' then
  local found = alive(E)
  drop(E, false)
  if found then return {1} end
  return {0}
end

if op == 'firsts' then  -- KEYS[1] and the entries named in ARGV[7..]: each one's first document, or false
  local out = {}
  local all = {E}
  for i = 7, #ARGV do all[#all + 1] = ARGV[i] end
  for i, e in ipairs(all) do
    if alive(e) then
      touch(e)
      out[i] = redis.call('LINDEX', e, 0) or false
    else
      out[i] = false
    end
  end
  return out
end

if op == 'alive' then  -- KEYS[1] and the entries named in ARGV[7..]: all present? (each touched)
  if not alive(E) then return {0} end
  for i = 7, #ARGV do
    if not alive(ARGV[i]) then return {0} end
  end
  touch(E)
  for i = 7, #ARGV do touch(ARGV[i]) end
  return {1}
end

if op == 'stats' then
  return {tonumber(redis.call('GET', P .. 'total') or '0'), redis.call('ZCARD', P .. 'lru'),
          tonumber(redis.call('HGET', P .. 'ssize', sess) or '0')}
end

return redis.error_reply('unknown op ' .. op)
