// `tollgate keys create | revoke | list`. The full key exists only in this process and on the
// operator's terminal; every file and manifest gets its SHA-256 hash.
import { randomInt } from 'node:crypto';
import { API_VERSION, ObjectMeta, validateManifest, type ApiKey } from '@tollgate/crds';
import { loadConfig } from '../config.ts';
import { generateKey, hashKey } from '../resources/keys.ts';
import { appendDocuments, editSpec, manifestToYaml, readResources } from '../resources/manifest-file.ts';
import { parseManifests } from '../resources/manifests.ts';
import { manifestFile, parseCommand, stringOption } from './args.ts';
import { CliError, UsageError } from './errors.ts';
import { readManifestText, validResources } from './files.ts';
import { printHelp, type CliIO } from './io.ts';
import { KEYS_CREATE_USAGE, KEYS_LIST_USAGE, KEYS_REVOKE_USAGE } from './usage.ts';

// The same rule the schema applies to metadata.name, taken from it so the two cannot disagree.
const NAME_PATTERN = new RegExp(ObjectMeta.properties.name.pattern ?? '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$');
const NAME_MAX = ObjectMeta.properties.name.maxLength ?? 253;
const PREFIX_PATTERN = /^[A-Za-z0-9]{1,32}$/;
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function isDnsName(name: string): boolean {
  return name.length <= NAME_MAX && NAME_PATTERN.test(name);
}

/** `<account>-<5 random chars>`: readable in `kubectl get`, and two keys of one account do not collide. */
function defaultKeyName(account: string): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += SUFFIX_ALPHABET[randomInt(SUFFIX_ALPHABET.length)];
  const head = account.slice(0, NAME_MAX - suffix.length - 1).replace(/[-.]+$/, '');
  return `${head}-${suffix}`;
}

function parseExpiry(value: string | undefined, now: Date): string | undefined {
  if (value === undefined) return undefined;
  // The schema's date-time format needs a time zone; a bare date would be read in local time.
  const shaped = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value);
  const at = new Date(value);
  if (!shaped || Number.isNaN(at.getTime())) throw new CliError(`--expires-at "${value}" is not an ISO 8601 date-time with a time zone, e.g. 2026-12-31T23:59:59Z`);
  if (at.getTime() <= now.getTime()) throw new CliError(`--expires-at ${value} is in the past; the key would never work`);
  return value;
}

export async function keysCreate(args: string[], io: CliIO): Promise<number> {
  const options = {
    account: { type: 'string' },
    name: { type: 'string' },
    'expires-at': { type: 'string' },
    prefix: { type: 'string' },
    file: { type: 'string' },
    output: { type: 'string', short: 'o' },
  } as const;
  const { values, help } = parseCommand(args, options, KEYS_CREATE_USAGE, { min: 0, max: 0 });
  if (help) return printHelp(io, KEYS_CREATE_USAGE);

  const output = stringOption(values, 'output');
  if (output !== undefined && output !== 'yaml') throw new UsageError(`-o ${output}: the only output format is yaml`, KEYS_CREATE_USAGE);
  const account = stringOption(values, 'account');
  if (!account) throw new UsageError('--account is required', KEYS_CREATE_USAGE);
  if (!isDnsName(account)) throw new CliError(`account "${account}" is not a valid name (DNS-1123: lower-case letters, digits, "-" and ".", at most ${NAME_MAX} characters)`);
  const explicitName = stringOption(values, 'name');
  const name = explicitName ?? defaultKeyName(account);
  if (!isDnsName(name)) throw new CliError(`key name "${name}" is not a valid name (DNS-1123: lower-case letters, digits, "-" and ".", starting and ending with a letter or digit, at most ${NAME_MAX} characters)`);
  const prefix = stringOption(values, 'prefix') ?? loadConfig(io.env).keyPrefix;
  if (!PREFIX_PATTERN.test(prefix)) throw new CliError(`key prefix "${prefix}" must be 1 to 32 letters or digits`);
  const expiresAt = parseExpiry(stringOption(values, 'expires-at'), new Date());

  const key = generateKey(prefix);
  const manifest: ApiKey = {
    apiVersion: API_VERSION,
    kind: 'ApiKey',
    metadata: { name },
    spec: { account, keyHash: hashKey(key), ...(expiresAt ? { expiresAt } : {}) },
  };
  const checked = validateManifest(manifest);
  if (!checked.ok) throw new CliError(`the ApiKey would be invalid: ${checked.problems.map((p) => `${p.field} ${p.message}`).join('; ')}`);

  if (output === 'yaml') {
    // stdout is the manifest (for kubectl apply -f -); the key goes to the terminal only.
    io.out(manifestToYaml(manifest));
    io.err(`API key for account "${account}" (ApiKey ${name}); shown only this once, the manifest holds only its hash:\n\n    ${key}\n\n`);
    return 0;
  }

  const file = manifestFile(values, io.env);
  const resources = validResources(await readManifestText(file), file);
  if (!resources.some((r) => r.kind === 'Account' && r.metadata.name === account)) {
    throw new CliError(`no Account "${account}" in ${file}; add the Account first (a key of a missing account is refused)`);
  }
  if (resources.some((r) => r.kind === 'ApiKey' && r.metadata.name === name)) {
    throw new CliError(`an ApiKey named "${name}" already exists in ${file}; choose another --name`);
  }
  await appendDocuments(file, [manifest]);
  io.out(`${key}\n`);
  io.err(`Created ApiKey "${name}" for account "${account}" in ${file}.\nThe key above is shown only this once; the file keeps only its SHA-256 hash.\n`);
  return 0;
}

export async function keysRevoke(args: string[], io: CliIO): Promise<number> {
  const { values, positionals, help } = parseCommand(args, { file: { type: 'string' } }, KEYS_REVOKE_USAGE, { min: 1, max: 1 });
  if (help) return printHelp(io, KEYS_REVOKE_USAGE);
  const [name] = positionals;
  const file = manifestFile(values, io.env);
  await readManifestText(file);
  const existing = (await readResources(file)).map(asKeyView).find((k) => k?.name === name);
  if (!existing) throw new CliError(`no ApiKey named "${name}" in ${file} (see: tollgate keys list --file ${file})`);
  if (existing.revoked) {
    io.out(`ApiKey "${name}" is already revoked in ${file}\n`);
    return 0;
  }
  await editSpec(file, 'ApiKey', name, (spec) => {
    spec.revoked = true;
  });
  // A refused file leaves the gateway on its last good snapshot, where this key still works.
  const after = parseManifests(await readManifestText(file), file);
  if (!after.ok) {
    throw new CliError(`revoked "${name}" in ${file}, but the file is invalid, so a running gateway keeps serving its last good state, where the key still works. Fix:\n  ${after.errors.join('\n  ')}`);
  }
  io.out(`revoked ApiKey "${name}" in ${file}; a running gateway refuses the key once it has reloaded (within seconds)\n`);
  return 0;
}

interface KeyView {
  name: string;
  account: string;
  keyHash: string;
  revoked: boolean;
  expiresAt: string | null;
}

/** Tolerant of half-valid documents: listing and revoking must work on a file the gateway refuses. */
function asKeyView(document: unknown): KeyView | null {
  const d = document as { kind?: unknown; metadata?: { name?: unknown }; spec?: Record<string, unknown> } | null;
  if (!d || d.kind !== 'ApiKey' || typeof d.metadata?.name !== 'string') return null;
  const spec = d.spec ?? {};
  return {
    name: d.metadata.name,
    account: typeof spec.account === 'string' ? spec.account : '',
    keyHash: typeof spec.keyHash === 'string' ? spec.keyHash : '',
    revoked: spec.revoked === true,
    expiresAt: typeof spec.expiresAt === 'string' ? spec.expiresAt : null,
  };
}

export async function keysList(args: string[], io: CliIO): Promise<number> {
  const { values, help } = parseCommand(args, { file: { type: 'string' } }, KEYS_LIST_USAGE, { min: 0, max: 0 });
  if (help) return printHelp(io, KEYS_LIST_USAGE);
  const file = manifestFile(values, io.env);
  await readManifestText(file);
  const documents = await readResources(file);
  const accounts = new Set(documents.filter((d) => (d as { kind?: unknown }).kind === 'Account').map((d) => (d as { metadata?: { name?: unknown } }).metadata?.name));
  const keys = documents.map(asKeyView).filter((k): k is KeyView => k !== null);
  if (keys.length === 0) {
    io.err(`no ApiKeys in ${file}\n`);
    return 0;
  }
  const now = Date.now();
  const rows = keys.map((k) => [
    k.name,
    k.account,
    k.revoked ? 'revoked' : k.expiresAt && Date.parse(k.expiresAt) <= now ? 'expired' : accounts.has(k.account) ? 'active' : 'no account',
    k.expiresAt ?? '-',
    // Enough of the hash to tell keys apart, not enough to be mistaken for the stored value.
    k.keyHash ? `${k.keyHash.slice(0, 'sha256:'.length + 8)}…` : '-',
  ]);
  io.out(table([['NAME', 'ACCOUNT', 'STATUS', 'EXPIRES', 'HASH'], ...rows]));
  return 0;
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join('   ')).join('\n') + '\n';
}
