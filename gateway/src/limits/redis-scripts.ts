// The Lua scripts of the shared limit store. Each runs atomically inside Redis, so a check and the
// write that follows it can never interleave with another replica's: that is what makes a limit
// exact across replicas. Each is one round trip (EVALSHA; the client re-sends the source once after
// a restart has emptied Redis's script cache).
//
// Time is Redis's own clock (TIME) unless the caller passes one (tests): all replicas then agree on
// which 100 ms slot "now" is, whatever their own clocks say.
//
// Sliding window (same semantics as sliding-window.ts): a hash of slot → amount plus a "total" field,
// and a sorted set of the slots for expiry in order. An amount of slot s counts until
// (s + slotsPerWindow + 1) × slotMs. Concurrency: a sorted set of lease id → expiry. Budget: a hash
// with the settled "used", the open "reserved" total and each reservation's amount ("r:<id>"), and a
// sorted set of reservation id → expiry; reservations a live replica no longer renews expire.

const PRELUDE = `
local function clock(arg)
  if arg ~= nil and arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function expireWindow(h, z, slot, spw)
  local bound = '(' .. string.format('%d', slot - spw)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', bound)
  if #gone == 0 then return tonumber(redis.call('HGET', h, 'total') or '0') end
  local amounts = redis.call('HMGET', h, unpack(gone))
  local sum = 0
  for i = 1, #gone do sum = sum + (tonumber(amounts[i]) or 0) end
  redis.call('HDEL', h, unpack(gone))
  redis.call('ZREMRANGEBYSCORE', z, '-inf', bound)
  return redis.call('HINCRBY', h, 'total', -sum)
end
local function resetIn(z, now, slotMs, spw)
  local newest = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if #newest == 0 then return 0 end
  return (tonumber(newest[2]) + spw + 1) * slotMs - now
end
-- Adds amount to a window if it stays within limit (limit < 0: unconditionally).
-- Returns granted, slot or -1, used, waitMs, resetMs.
local function windowTry(h, z, amount, limit, now, slotMs, spw)
  local slot = math.floor(now / slotMs)
  local total = expireWindow(h, z, slot, spw)
  -- A clock that steps back joins the newest slot: counted a little longer, never shorter.
  local newest = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if #newest > 0 and tonumber(newest[2]) > slot then slot = tonumber(newest[2]) end
  if limit >= 0 and total + amount > limit then
    local excess = total + amount - limit
    local slots = redis.call('ZRANGE', z, 0, -1)
    local wait = spw * slotMs
    if #slots > 0 then
      local amounts = redis.call('HMGET', h, unpack(slots))
      for i = 1, #slots do
        excess = excess - (tonumber(amounts[i]) or 0)
        if excess <= 0 then wait = (tonumber(slots[i]) + spw + 1) * slotMs - now; break end
      end
    end
    return false, -1, total, wait, resetIn(z, now, slotMs, spw)
  end
  if amount > 0 then
    local field = string.format('%d', slot)
    redis.call('HINCRBY', h, field, amount)
    redis.call('ZADD', z, slot, field)
    total = redis.call('HINCRBY', h, 'total', amount)
    local ttl = (spw + 2) * slotMs
    redis.call('PEXPIRE', h, ttl)
    redis.call('PEXPIRE', z, ttl)
  end
  return true, slot, total, 0, resetIn(z, now, slotMs, spw)
end
local function windowUndo(h, slot, amount)
  if amount > 0 and slot >= 0 then
    local field = string.format('%d', slot)
    if redis.call('HEXISTS', h, field) == 1 then
      redis.call('HINCRBY', h, field, -amount)
      redis.call('HINCRBY', h, 'total', -amount)
    end
  end
end
local function expireReservations(h, z, now)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', string.format('%d', now))
  if #gone == 0 then return end
  local sum = 0
  for i = 1, #gone do
    local field = 'r:' .. gone[i]
    sum = sum + (tonumber(redis.call('HGET', h, field)) or 0)
    redis.call('HDEL', h, field)
  end
  redis.call('ZREMRANGEBYSCORE', z, '-inf', string.format('%d', now))
  if sum > 0 then redis.call('HINCRBY', h, 'reserved', -sum) end
end
`;

/**
 * KEYS: window hash, window zset. ARGV: amount, limit (-1: record unconditionally), now, slotMs,
 * slotsPerWindow. Returns {granted, slot, used, waitMs, resetMs}.
 */
export const WINDOW_ADD = `${PRELUDE}
local granted, slot, used, wait, reset = windowTry(KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]), clock(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
return {granted and 1 or 0, slot, used, wait, reset}
`;

/** KEYS: window hash, window zset. ARGV: slot ref, delta, now, slotMs, slotsPerWindow. */
export const WINDOW_ADJUST = `${PRELUDE}
local h, z = KEYS[1], KEYS[2]
local ref, delta = ARGV[1], tonumber(ARGV[2])
local now, slotMs, spw = clock(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
expireWindow(h, z, math.floor(now / slotMs), spw)
local current = tonumber(redis.call('HGET', h, ref))
if not current then return 0 end
-- Never below zero: a refund cannot free more than the slot holds.
local applied = math.max(delta, -current)
redis.call('HINCRBY', h, ref, applied)
redis.call('HINCRBY', h, 'total', applied)
return applied
`;

/** KEYS: window hash, window zset. ARGV: now, slotMs, slotsPerWindow. Returns {used, resetMs}. */
export const WINDOW_PEEK = `${PRELUDE}
local h, z = KEYS[1], KEYS[2]
local now, slotMs, spw = clock(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local total = expireWindow(h, z, math.floor(now / slotMs), spw)
return {total, resetIn(z, now, slotMs, spw)}
`;

/** KEYS: lease zset. ARGV: max, lease id, leaseMs, now. Returns {granted, open}. */
export const LEASE_ACQUIRE = `${PRELUDE}
local z = KEYS[1]
local max, id, leaseMs, now = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), clock(ARGV[4])
redis.call('ZREMRANGEBYSCORE', z, '-inf', string.format('%d', now))
local open = redis.call('ZCARD', z)
if open >= max then return {0, open} end
redis.call('ZADD', z, now + leaseMs, id)
redis.call('PEXPIRE', z, leaseMs * 2)
return {1, open + 1}
`;

/** KEYS: lease zset. ARGV: lease id. */
export const LEASE_RELEASE = `
return redis.call('ZREM', KEYS[1], ARGV[1])
`;

/**
 * Renews this replica's leases and reservations. KEYS: the sorted set of each id in ARGV[3..], in
 * the same order. ARGV: leaseMs, now, ids... Only ids still present are renewed (XX): an
 * id that already expired stays expired, so a renewal can never push a count past its limit.
 */
export const RENEW = `${PRELUDE}
local leaseMs, now = tonumber(ARGV[1]), clock(ARGV[2])
local renewed = 0
for i = 3, #ARGV do
  local z = KEYS[i - 2]
  renewed = renewed + redis.call('ZADD', z, 'XX', 'CH', now + leaseMs, ARGV[i])
  if redis.call('PTTL', z) < leaseMs * 2 then redis.call('PEXPIRE', z, leaseMs * 2) end
end
return renewed
`;

/**
 * KEYS: budget hash, reservation zset. ARGV: amount, limit, reservation id, leaseMs, now, keepMs.
 * Returns {granted, used}: used is settled usage plus open reservations after the call.
 */
export const BUDGET_RESERVE = `${PRELUDE}
local h, z = KEYS[1], KEYS[2]
local amount, limit, id = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local leaseMs, now, keepMs = tonumber(ARGV[4]), clock(ARGV[5]), tonumber(ARGV[6])
expireReservations(h, z, now)
local used = tonumber(redis.call('HGET', h, 'used') or '0') + tonumber(redis.call('HGET', h, 'reserved') or '0')
-- A zero reservation (an endpoint priced only afterwards) still needs some budget left.
local granted
if amount > 0 then granted = used + amount <= limit else granted = used < limit end
if not granted then return {0, used} end
if amount > 0 then
  redis.call('HSET', h, 'r:' .. id, amount)
  redis.call('HINCRBY', h, 'reserved', amount)
  redis.call('ZADD', z, now + leaseMs, id)
  redis.call('PEXPIRE', h, keepMs)
  redis.call('PEXPIRE', z, keepMs)
end
return {1, used + amount}
`;

/**
 * Settles one reservation (or charges usage that had none) exactly once. KEYS: budget hash,
 * reservation zset, settled marker. ARGV: reservation id, actual, keepMs, markerMs.
 * Returns 1 when applied, 0 when this id was settled before (a retry after a lost reply).
 */
export const BUDGET_SETTLE = `${PRELUDE}
local h, z, marker = KEYS[1], KEYS[2], KEYS[3]
local id, actual, keepMs, markerMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not redis.call('SET', marker, '1', 'NX', 'PX', markerMs) then return 0 end
local reserved = tonumber(redis.call('HGET', h, 'r:' .. id))
if reserved then
  redis.call('HDEL', h, 'r:' .. id)
  redis.call('HINCRBY', h, 'reserved', -reserved)
  redis.call('ZREM', z, id)
end
if actual > 0 then
  redis.call('HINCRBY', h, 'used', actual)
  redis.call('PEXPIRE', h, keepMs)
end
return 1
`;

/** KEYS: budget hash, reservation zset. ARGV: now. Returns settled usage plus open reservations. */
export const BUDGET_USED = `${PRELUDE}
local h, z = KEYS[1], KEYS[2]
expireReservations(h, z, clock(ARGV[1]))
return tonumber(redis.call('HGET', h, 'used') or '0') + tonumber(redis.call('HGET', h, 'reserved') or '0')
`;

/**
 * Usage of one finished request, counted once. KEYS: month usage hash, marker. ARGV: account,
 * inputTokens, outputTokens, keepMs, markerMs. Fields: "<account>|i", "|o", "|r".
 */
export const USAGE_ADD = `
local h, marker = KEYS[1], KEYS[2]
local account = ARGV[1]
if not redis.call('SET', marker, '1', 'NX', 'PX', tonumber(ARGV[5])) then return 0 end
redis.call('HINCRBY', h, account .. '|r', 1)
if tonumber(ARGV[2]) > 0 then redis.call('HINCRBY', h, account .. '|i', ARGV[2]) end
if tonumber(ARGV[3]) > 0 then redis.call('HINCRBY', h, account .. '|o', ARGV[3]) end
redis.call('PEXPIRE', h, tonumber(ARGV[4]))
return 1
`;

/**
 * A request's whole admission in one round trip, all or nothing: a concurrency lease in each slot
 * set, then one request in each per-minute window, then a look at each token window (for headers).
 * KEYS: nSlots lease zsets, then a (hash, zset) pair per request window, then per peeked window.
 * ARGV: nSlots, nRequests, nPeeks, now, slotMs, slotsPerWindow, leaseMs, lease id, then each slot's
 * max, then each request window's limit.
 * Returns {1, i, open} when slot set i is full, {2, i, used, waitMs, resetMs} when request window i
 * is, with everything taken before undone; else {0, then (ref, used, resetMs) per request window,
 * then (used, resetMs) per peeked window}.
 */
export const ADMIT = `${PRELUDE}
local nS, nR, nP = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now, slotMs, spw, leaseMs, id = clock(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local arg, key = 9, 1
for i = 1, nS do
  local z, max = KEYS[key], tonumber(ARGV[arg])
  key, arg = key + 1, arg + 1
  redis.call('ZREMRANGEBYSCORE', z, '-inf', string.format('%d', now))
  local open = redis.call('ZCARD', z)
  if open >= max then
    for j = 1, i - 1 do redis.call('ZREM', KEYS[j], id) end
    return {1, i, open}
  end
  redis.call('ZADD', z, now + leaseMs, id)
  redis.call('PEXPIRE', z, leaseMs * 2)
end
local out, refs = {0}, {}
for i = 1, nR do
  local h, z, limit = KEYS[key], KEYS[key + 1], tonumber(ARGV[arg])
  key, arg = key + 2, arg + 1
  local granted, slot, used, wait, reset = windowTry(h, z, 1, limit, now, slotMs, spw)
  if not granted then
    for j = 1, i - 1 do windowUndo(KEYS[nS + 2 * j - 1], refs[j], 1) end
    for j = 1, nS do redis.call('ZREM', KEYS[j], id) end
    return {2, i, used, wait, reset}
  end
  refs[i] = slot
  table.insert(out, slot); table.insert(out, used); table.insert(out, reset)
end
for i = 1, nP do
  local h, z = KEYS[key], KEYS[key + 1]
  key = key + 2
  table.insert(out, expireWindow(h, z, math.floor(now / slotMs), spw))
  table.insert(out, resetIn(z, now, slotMs, spw))
end
return out
`;

/**
 * A request's token reservation in one round trip, all or nothing: the amount in each per-minute
 * token window, then in each monthly budget (as a reservation lease under one id).
 * KEYS: a (hash, zset) pair per window, then per budget. ARGV: nWindows, nBudgets, now, slotMs,
 * slotsPerWindow, leaseMs, keepMs, reservation id, amount, then each window's limit, then each
 * budget's limit. Returns {1, i, used, waitMs, resetMs} when window i refuses, {2, i, used} when
 * budget i does (everything undone), else {0, then (ref, used, resetMs) per window}.
 */
export const RESERVE = `${PRELUDE}
local nW, nB = tonumber(ARGV[1]), tonumber(ARGV[2])
local now, slotMs, spw, leaseMs, keepMs = clock(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local id, amount = ARGV[8], tonumber(ARGV[9])
local arg = 10
local out, refs = {0}, {}
local function undoWindows(upto)
  for j = 1, upto do windowUndo(KEYS[2 * j - 1], refs[j], amount) end
end
for i = 1, nW do
  local h, z, limit = KEYS[2 * i - 1], KEYS[2 * i], tonumber(ARGV[arg])
  arg = arg + 1
  local granted, slot, used, wait, reset = windowTry(h, z, amount, limit, now, slotMs, spw)
  if not granted then
    undoWindows(i - 1)
    return {1, i, used, wait, reset}
  end
  refs[i] = slot
  table.insert(out, slot); table.insert(out, used); table.insert(out, reset)
end
for i = 1, nB do
  local h, z, limit = KEYS[2 * (nW + i) - 1], KEYS[2 * (nW + i)], tonumber(ARGV[arg])
  arg = arg + 1
  expireReservations(h, z, now)
  local used = tonumber(redis.call('HGET', h, 'used') or '0') + tonumber(redis.call('HGET', h, 'reserved') or '0')
  local granted
  if amount > 0 then granted = used + amount <= limit else granted = used < limit end
  if not granted then
    for j = 1, i - 1 do
      local hj, zj = KEYS[2 * (nW + j) - 1], KEYS[2 * (nW + j)]
      redis.call('HDEL', hj, 'r:' .. id)
      redis.call('HINCRBY', hj, 'reserved', -amount)
      redis.call('ZREM', zj, id)
    end
    undoWindows(nW)
    return {2, i, used}
  end
  if amount > 0 then
    redis.call('HSET', h, 'r:' .. id, amount)
    redis.call('HINCRBY', h, 'reserved', amount)
    redis.call('ZADD', z, now + leaseMs, id)
    redis.call('PEXPIRE', h, keepMs)
    redis.call('PEXPIRE', z, keepMs)
  end
end
return out
`;
