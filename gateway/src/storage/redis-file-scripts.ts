// The Lua scripts of service-test's files in the shared store (storage/redis-files.ts). Each changes a
// file and its account's totals together, atomically, so two replicas uploading for one account at
// once can never both slip under the bound, and a total never drifts from the files it counts.
//
// Per account: an index (sorted set id → upload sequence, the listing order), totals (hash: bytes,
// count, seq), expiries (sorted set id → ms) and tombstones (sorted set id → sequence of files deleted
// lately, so a deleted id still works as a list cursor). Per file: its record (JSON) and its bytes.
// Every key a script touches is in KEYS, so they work on Redis Cluster too (all under one hash tag).

/**
 * Turns an upload into a file if the account stays within its bound. KEYS: index, totals, expiries,
 * record, data, upload. ARGV: id, bytes, maxBytes, maxCount, record JSON, expiresAt (ms, or '').
 * Returns {1, seq} when stored, {0, bytes, count} when the bound refuses (the upload is dropped),
 * {-1} when the upload is gone (it expired).
 */
export const FILE_COMMIT = `
local index, totals, expiries, record, data, upload = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local id, bytes, maxBytes, maxCount = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', upload) == 0 then return {-1} end
local used = tonumber(redis.call('HGET', totals, 'bytes') or '0')
local count = tonumber(redis.call('HGET', totals, 'count') or '0')
if count + 1 > maxCount or used + bytes > maxBytes then
  redis.call('DEL', upload)
  return {0, used, count}
end
redis.call('RENAME', upload, data)
redis.call('PERSIST', data)
redis.call('SET', record, ARGV[5])
local seq = redis.call('HINCRBY', totals, 'seq', 1)
redis.call('ZADD', index, seq, id)
redis.call('HINCRBY', totals, 'bytes', bytes)
redis.call('HINCRBY', totals, 'count', 1)
if ARGV[6] ~= '' then redis.call('ZADD', expiries, tonumber(ARGV[6]), id) end
return {1, seq}
`;

/**
 * Deletes a file and gives its room back. KEYS: index, totals, expiries, tombstones, record, data.
 * ARGV: id, bytes, tombstones kept. Returns 1 when deleted, 0 when it was gone already.
 */
export const FILE_FORGET = `
local index, totals, expiries, tombstones, record, data = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local id = ARGV[1]
local seq = redis.call('ZSCORE', index, id)
redis.call('ZREM', expiries, id)
if not seq then return 0 end
redis.call('ZREM', index, id)
redis.call('DEL', record, data)
redis.call('HINCRBY', totals, 'bytes', -tonumber(ARGV[2]))
redis.call('HINCRBY', totals, 'count', -1)
redis.call('ZADD', tombstones, seq, id)
redis.call('ZREMRANGEBYRANK', tombstones, 0, -tonumber(ARGV[3]) - 1)
return 1
`;
