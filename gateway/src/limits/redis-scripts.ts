// The Lua scripts of the shared limit store. Each runs atomically inside Redis, so a check and the
// write that follows it can never interleave with another replica's: that is what makes a limit
// exact across replicas. A request costs two calls: ADMIT before it runs (the only round trip on the
// way to its answer) and SETTLE when it ends (sent in the same write as its usage count). EVALSHA
// each; the client re-sends the source once after a restart has emptied Redis's script cache.
//
// All keys of one call belong to one account and carry its hash tag, so they share a cluster slot.
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
-- Adds delta to the amount of slot ref, never below zero (a refund cannot free more than it holds).
local function windowAdjust(h, z, ref, delta, now, slotMs, spw)
  expireWindow(h, z, math.floor(now / slotMs), spw)
  local field = string.format('%d', ref)
  local current = tonumber(redis.call('HGET', h, field))
  if not current then return end
  local applied = math.max(delta, -current)
  redis.call('HINCRBY', h, field, applied)
  redis.call('HINCRBY', h, 'total', applied)
end
-- Settled usage plus open reservations.
local function budgetUsed(h, z, now)
  expireReservations(h, z, now)
  return tonumber(redis.call('HGET', h, 'used') or '0') + tonumber(redis.call('HGET', h, 'reserved') or '0')
end
-- Books reservation id for amount: an entry in the hash and a lease in the sorted set.
local function budgetBook(h, z, id, amount, now, leaseMs, keepMs)
  redis.call('HSET', h, 'r:' .. id, amount)
  redis.call('HINCRBY', h, 'reserved', amount)
  redis.call('ZADD', z, now + leaseMs, id)
  redis.call('PEXPIRE', h, keepMs)
  redis.call('PEXPIRE', z, keepMs)
end
-- Turns reservation id (nil: none) into actual usage.
local function budgetSettle(h, z, id, actual, keepMs)
  if id then
    local reserved = tonumber(redis.call('HGET', h, 'r:' .. id))
    if reserved then
      redis.call('HDEL', h, 'r:' .. id)
      redis.call('HINCRBY', h, 'reserved', -reserved)
      redis.call('ZREM', z, id)
    end
  end
  if actual > 0 then
    redis.call('HINCRBY', h, 'used', actual)
    redis.call('PEXPIRE', h, keepMs)
  end
end
`;

/**
 * A request's whole admission, all or nothing: a concurrency lease in each slot set, one request in
 * each per-minute request window, then its tokens: fitted to the budgets' room (a default output, to
 * the token budgets' and to what the spend budgets still pay for), checked against every limit on
 * their own, reserved in each token window and booked in each budget under the lease id; then its
 * worst cost in money booked in each spend budget. Without tokens the token windows are only reported.
 * KEYS: nS lease zsets, then a (hash, zset) pair per request window, per token window, per budget,
 * per spend budget.
 * ARGV: nS, nR, nW, nB, now, slotMs, slotsPerWindow, leaseMs, keepMs, id, withTokens, input, output,
 * fit, minOutput, choices, nP, withSpend, fixed, outputPerMillion, floor, then the limits: each slot
 * set's, request window's, token window's, budget's, spend budget's.
 * Returns, everything taken undone on a refusal: {1, i, open} slot set i is full; {2, i, used, waitMs,
 * resetMs} request window i; {3, i, amount, isBudget} the amount alone exceeds limit i; {4, i, used,
 * waitMs, resetMs, amount} token window i; {5, i, used, amount} budget i; {6, i, used, spend} spend
 * budget i. Admitted: {0, amount, cap or -1, spend, then (ref, used, resetMs) per request window and
 * per token window (ref -1 when only reported)}.
 */
export const ADMIT = `${PRELUDE}
local nS, nR, nW, nB = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now, slotMs, spw = clock(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local leaseMs, keepMs, id = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
local withTokens = ARGV[11] == '1'
local input, output, fit, minOutput, choices = tonumber(ARGV[12]), tonumber(ARGV[13]), ARGV[14] == '1', tonumber(ARGV[15]), tonumber(ARGV[16])
local nP, withSpend = tonumber(ARGV[17]), ARGV[18] == '1'
local fixed, outPrice, floor = tonumber(ARGV[19]), tonumber(ARGV[20]), tonumber(ARGV[21])
local R, W, B = nS, nS + 2 * nR, nS + 2 * nR + 2 * nW
local P = B + 2 * nB
local function limit(base, i) return tonumber(ARGV[21 + base + i]) end
local function requestLimit(i) return limit(nS, i) end
local function windowLimit(i) return limit(nS + nR, i) end
local function budgetLimit(i) return limit(nS + nR + nW, i) end
local function spendLimit(i) return limit(nS + nR + nW + nB, i) end
-- Micros of n output tokens at outPrice micros per million, exact in doubles (money.ts: tokensCost).
local function tokensCost(n)
  local whole = math.floor(outPrice / 1000000)
  local rest = outPrice - whole * 1000000
  return n * whole + math.ceil(n * rest / 1000000)
end

local slots, requestRefs, windowRefs, amount = 0, {}, {}, 0
local function undo()
  for i = 1, slots do redis.call('ZREM', KEYS[i], id) end
  for i = 1, #requestRefs do windowUndo(KEYS[R + 2 * i - 1], requestRefs[i], 1) end
  for i = 1, #windowRefs do windowUndo(KEYS[W + 2 * i - 1], windowRefs[i], amount) end
end

for i = 1, nS do
  local z = KEYS[i]
  redis.call('ZREMRANGEBYSCORE', z, '-inf', string.format('%d', now))
  local open = redis.call('ZCARD', z)
  if open >= limit(0, i) then
    undo()
    return {1, i, open}
  end
  redis.call('ZADD', z, now + leaseMs, id)
  redis.call('PEXPIRE', z, leaseMs * 2)
  slots = i
end
local out = {0, 0, -1, 0}
for i = 1, nR do
  local granted, slot, used, wait, reset = windowTry(KEYS[R + 2 * i - 1], KEYS[R + 2 * i], 1, requestLimit(i), now, slotMs, spw)
  if not granted then
    undo()
    return {2, i, used, wait, reset}
  end
  requestRefs[i] = slot
  table.insert(out, slot); table.insert(out, used); table.insert(out, reset)
end
local spendUsed = {}
if withSpend then
  for i = 1, nP do spendUsed[i] = budgetUsed(KEYS[P + 2 * i - 1], KEYS[P + 2 * i], now) end
end
if not withTokens then
  for i = 1, nW do
    local h, z = KEYS[W + 2 * i - 1], KEYS[W + 2 * i]
    table.insert(out, -1)
    table.insert(out, expireWindow(h, z, math.floor(now / slotMs), spw))
    table.insert(out, resetIn(z, now, slotMs, spw))
  end
else
  local used = {}
  for i = 1, nB do used[i] = budgetUsed(KEYS[B + 2 * i - 1], KEYS[B + 2 * i], now) end
  local cap = -1
  amount = input + output
  if fit then
    local fitted, capped = output, false
    for i = 1, nB do
      local room = budgetLimit(i) - used[i] - input
      if room < fitted then fitted, capped = room, true end
    end
    if withSpend and outPrice > 0 and nP > 0 then
      -- Held to its reservation even with room to spare (token-fit.ts): money budgets are never run past.
      capped = true
      for i = 1, nP do
        -- The most output the room pays for (token-fit.ts: affordableOutput).
        local room = spendLimit(i) - spendUsed[i] - fixed
        local affordable = fitted
        if room <= 0 then affordable = 0
        elseif tokensCost(fitted) > room then
          affordable = math.min(fitted, math.floor(room / outPrice * 1000000))
          while affordable > 0 and tokensCost(affordable) > room do affordable = affordable - 1 end
          while affordable + 1 < fitted and tokensCost(affordable + 1) <= room do affordable = affordable + 1 end
        end
        if affordable < fitted then fitted, capped = affordable, true end
      end
    end
    fitted = math.max(minOutput, 1, fitted)
    if capped then
      cap = math.max(minOutput, math.floor(fitted / choices))
      amount = input + cap * choices
    else
      amount = input + fitted
    end
  end
  for i = 1, nW do if amount > windowLimit(i) then undo(); return {3, i, amount, 0} end end
  for i = 1, nB do if amount > budgetLimit(i) then undo(); return {3, i, amount, 1} end end
  for i = 1, nW do
    local granted, slot, wused, wait, reset = windowTry(KEYS[W + 2 * i - 1], KEYS[W + 2 * i], amount, windowLimit(i), now, slotMs, spw)
    if not granted then
      undo()
      return {4, i, wused, wait, reset, amount}
    end
    windowRefs[i] = slot
    table.insert(out, slot); table.insert(out, wused); table.insert(out, reset)
  end
  for i = 1, nB do
    -- A zero reservation (an endpoint priced only afterwards) still needs some budget left.
    local fits
    if amount > 0 then fits = used[i] + amount <= budgetLimit(i) else fits = used[i] < budgetLimit(i) end
    if not fits then
      undo()
      return {5, i, used[i], amount}
    end
  end
  out[2], out[3] = amount, cap
end
local spend = 0
if withSpend then
  local outputTokens = 0
  if withTokens then outputTokens = amount - input end
  spend = math.max(floor, fixed + tokensCost(outputTokens))
  for i = 1, nP do
    local fits
    if spend > 0 then fits = spendUsed[i] + spend <= spendLimit(i) else fits = spendUsed[i] < spendLimit(i) end
    if not fits then
      undo()
      return {6, i, spendUsed[i], spend}
    end
  end
end
if withTokens and amount > 0 then
  for i = 1, nB do budgetBook(KEYS[B + 2 * i - 1], KEYS[B + 2 * i], id, amount, now, leaseMs, keepMs) end
end
if spend > 0 then
  for i = 1, nP do budgetBook(KEYS[P + 2 * i - 1], KEYS[P + 2 * i], id, spend, now, leaseMs, keepMs) end
end
out[4] = spend
return out
`;

/**
 * A request's whole settlement, applied once (a retry after a lost reply finds the marker and changes
 * nothing): its leases released, each token window corrected to the actual usage (or charged it, when
 * nothing was reserved), each budget's reservation turned into the actual usage, each spend budget's
 * into the actual cost, and a request that ended before its admission counted where its windows have room.
 * KEYS: marker, nS lease zsets, then a (hash, zset) pair per token window, per budget, per spend
 * budget, per request window to count in. ARGV: nS, nW, nB, nC, id, held (1: the admission's
 * reservation is in Redis), reserved, actual, now, slotMs, slotsPerWindow, keepMs, markerMs, nP,
 * spendReserved, spendActual, then each token window's ref, then each request window's limit.
 * Returns 1 when applied, 0 when applied before.
 */
export const SETTLE = `${PRELUDE}
local nS, nW, nB, nC = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local id, held, reserved, actual = ARGV[5], ARGV[6] == '1', tonumber(ARGV[7]), tonumber(ARGV[8])
local now, slotMs, spw, keepMs, markerMs = clock(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local nP, spendReserved, spendActual = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])
local W, B = 1 + nS, 1 + nS + 2 * nW
local P = B + 2 * nB
local C = P + 2 * nP
for i = 1, nS do redis.call('ZREM', KEYS[1 + i], id) end
if nW + nB + nP + nC == 0 then return 1 end
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', markerMs) then return 0 end
for i = 1, nW do
  local h, z, ref = KEYS[W + 2 * i - 1], KEYS[W + 2 * i], tonumber(ARGV[16 + i])
  if reserved > 0 then
    if held and ref >= 0 and actual ~= reserved then windowAdjust(h, z, ref, actual - reserved, now, slotMs, spw) end
  elseif actual > 0 then
    windowTry(h, z, actual, -1, now, slotMs, spw)
  end
end
local reservation = nil
if held and reserved > 0 then reservation = id end
for i = 1, nB do budgetSettle(KEYS[B + 2 * i - 1], KEYS[B + 2 * i], reservation, actual, keepMs) end
local spendReservation = nil
if held and spendReserved > 0 then spendReservation = id end
for i = 1, nP do budgetSettle(KEYS[P + 2 * i - 1], KEYS[P + 2 * i], spendReservation, spendActual, keepMs) end
for i = 1, nC do windowTry(KEYS[C + 2 * i - 1], KEYS[C + 2 * i], 1, tonumber(ARGV[16 + nW + i]), now, slotMs, spw) end
return 1
`;

/**
 * Renews this replica's leases and reservations of one account. KEYS: the sorted set of each id in
 * ARGV[3..], in the same order. ARGV: leaseMs, now, ids... Only ids still present are renewed (XX):
 * an id that already expired stays expired, so a renewal can never push a count past its limit.
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
 * Usage of one finished request, counted once. KEYS: month usage hash, marker. ARGV: account,
 * inputTokens, outputTokens, keepMs, markerMs, spend (micros), key name, model name (either may be
 * empty). Fields: "<account>|i", "|o", "|r", "|s"; the same under "k/<key>|…" (with "k/<key>|a" naming
 * its account) and "m/<model>|…". Names are DNS names: neither "|" nor "/" can occur in them.
 */
export const USAGE_ADD = `
local h, marker = KEYS[1], KEYS[2]
if not redis.call('SET', marker, '1', 'NX', 'PX', tonumber(ARGV[5])) then return 0 end
local input, output, spend = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6] or '0')
local function count(prefix)
  redis.call('HINCRBY', h, prefix .. '|r', 1)
  if input > 0 then redis.call('HINCRBY', h, prefix .. '|i', input) end
  if output > 0 then redis.call('HINCRBY', h, prefix .. '|o', output) end
  if spend > 0 then redis.call('HINCRBY', h, prefix .. '|s', spend) end
end
count(ARGV[1])
if ARGV[7] and ARGV[7] ~= '' then
  count('k/' .. ARGV[7])
  redis.call('HSET', h, 'k/' .. ARGV[7] .. '|a', ARGV[1])
end
if ARGV[8] and ARGV[8] ~= '' then count('m/' .. ARGV[8]) end
redis.call('PEXPIRE', h, tonumber(ARGV[4]))
return 1
`;
