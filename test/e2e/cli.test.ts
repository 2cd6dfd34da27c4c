// The `tollgate` command as an operator runs it: a real child process on Node 24, against temporary
// manifest files, with a real gateway reading the same file where it matters.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validateManifest } from '@tollgate/crds';
import { hashKey } from '../../gateway/src/resources/keys.ts';
import { account, expectErrorShape, plan, raw, startTestGateway, toYaml, type TestGateway } from '../helpers/gateway.ts';

const CLI = fileURLToPath(new URL('../../gateway/src/cli/main.ts', import.meta.url));
const LAUNCHER = fileURLToPath(new URL('../../gateway/bin/tollgate.js', import.meta.url));
const CHART_CRDS = fileURLToPath(new URL('../../charts/tollgate/crds/', import.meta.url));
const KEY_SHAPE = /^tg_sk_[A-Za-z0-9_-]{43}$/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with an environment free of the developer's TOLLGATE_* settings. */
function tollgate(args: string[], options: { env?: Record<string, string>; cwd?: string; script?: string } = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('TOLLGATE_')) env[name] = value;
  Object.assign(env, options.env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.script ?? CLI, ...args], { env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-cli-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

async function scratchFile(name: string, text: string): Promise<string> {
  const file = path.join(scratch, name);
  await writeFile(file, text);
  return file;
}

describe('tollgate keys, against a running gateway', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway([plan('pro', ['gpt-4o*']), account('acme', 'pro')]);
  });
  afterAll(() => gw.stop());

  it('keys create prints the key once and stores only its sha256 hash', async () => {
    const run = await tollgate(['keys', 'create', '--account', 'acme', '--name', 'acme-ci', '--file', gw.configFile]);
    expect(run.code, run.stderr).toBe(0);
    key = run.stdout.trim();
    expect(key).toMatch(KEY_SHAPE);
    expect(run.stdout).toBe(`${key}\n`);
    expect(occurrences(run.stdout + run.stderr, key)).toBe(1);
    expect(run.stderr).toMatch(/only this once/);

    const text = await readFile(gw.configFile, 'utf8');
    expect(text).toContain(`keyHash: ${hashKey(key)}`);
    expect(text).not.toContain(key);
    expect(text).not.toContain(key.slice('tg_sk_'.length, 'tg_sk_'.length + 16));
  });

  it('the gateway accepts the new key once it has reloaded the file', async () => {
    await gw.source.reload();
    const response = await raw(gw, 'GET', '/v1/models', { key });
    expect(response.status).toBe(200);
    expect(response.json.data.map((m: { id: string }) => m.id)).toContain('service-test');
  });

  it('keys list shows name, account and status, never a full hash', async () => {
    const run = await tollgate(['keys', 'list', '--file', gw.configFile]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^NAME\s+ACCOUNT\s+STATUS/);
    expect(run.stdout).toMatch(/acme-ci\s+acme\s+active/);
    expect(run.stdout).not.toContain(hashKey(key));
    expect(run.stdout).not.toContain(hashKey(key).slice(0, 30));
  });

  it('keys revoke makes the gateway answer 401', async () => {
    const run = await tollgate(['keys', 'revoke', 'acme-ci', '--file', gw.configFile]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/revoked ApiKey "acme-ci"/);
    await gw.source.reload();
    expectErrorShape(await raw(gw, 'GET', '/v1/models', { key }), 401, 'invalid_api_key');
    expect((await tollgate(['keys', 'list', '--file', gw.configFile])).stdout).toMatch(/acme-ci\s+acme\s+revoked/);
    const again = await tollgate(['keys', 'revoke', 'acme-ci', '--file', gw.configFile]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already revoked/);
  });

  it('refuses a duplicate name, a missing account, a bad name, and leaves the file alone', async () => {
    const before = await readFile(gw.configFile, 'utf8');
    const cases: Array<[string[], RegExp]> = [
      [['--account', 'acme', '--name', 'acme-ci'], /already exists/],
      [['--account', 'ghost'], /no Account "ghost"/],
      [['--account', 'acme', '--name', 'Bad_Name'], /not a valid name \(DNS-1123/],
      [['--account', 'acme', '--name=trailing-dash-'], /not a valid name/],
      [['--account', 'acme', '--expires-at', 'next tuesday'], /not an ISO 8601 date-time/],
      [['--account', 'acme', '--expires-at', '2001-01-01T00:00:00Z'], /in the past/],
    ];
    for (const [args, message] of cases) {
      const run = await tollgate(['keys', 'create', ...args, '--file', gw.configFile]);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
    }
    expect(await readFile(gw.configFile, 'utf8')).toBe(before);
  });

  it('revoking an unknown key exits 1 with a clear message', async () => {
    const run = await tollgate(['keys', 'revoke', 'nobody', '--file', gw.configFile]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no ApiKey named "nobody"/);
  });
});

describe('tollgate keys: files and defaults', () => {
  const commented = [
    '# Operator notes at the top: keep me.',
    '---',
    '# The paying customer.',
    'apiVersion: tollgate.dev/v1alpha1',
    'kind: Account',
    'metadata:',
    '  name: acme # inline note',
    'spec: {}',
    '# A note between documents.',
    '---',
    'apiVersion: tollgate.dev/v1alpha1',
    'kind: Plan',
    'metadata:',
    '  name: pro',
    'spec:',
    '  models: ["gpt-4o*"]   # globs allowed',
    '',
  ].join('\n');

  it('comments in the file survive create and revoke', async () => {
    const file = await scratchFile('commented.yaml', commented);
    expect((await tollgate(['keys', 'create', '--account', 'acme', '--name', 'k1', '--file', file])).code).toBe(0);
    expect((await tollgate(['keys', 'create', '--account', 'acme', '--name', 'k2', '--file', file])).code).toBe(0);
    expect((await tollgate(['keys', 'revoke', 'k1', '--file', file])).code).toBe(0);
    const text = await readFile(file, 'utf8');
    for (const comment of ['# Operator notes at the top: keep me.', '# The paying customer.', '# inline note', '# A note between documents.', '# globs allowed']) {
      expect(text).toContain(comment);
    }
    const keys = (await tollgate(['keys', 'list', '--file', file])).stdout;
    expect(keys).toMatch(/k1\s+acme\s+revoked/);
    expect(keys).toMatch(/k2\s+acme\s+active/);
    expect((await tollgate(['validate', file])).code).toBe(0);
  });

  it('the default key name is the account plus a short random suffix', async () => {
    const file = await scratchFile('names.yaml', commented);
    const first = await tollgate(['keys', 'create', '--account', 'acme', '--file', file]);
    const second = await tollgate(['keys', 'create', '--account', 'acme', '--file', file]);
    expect([first.code, second.code]).toEqual([0, 0]);
    const names = [...(await readFile(file, 'utf8')).matchAll(/kind: ApiKey\nmetadata:\n {2}name: (\S+)/g)].map((m) => m[1]);
    expect(names).toHaveLength(2);
    for (const name of names) expect(name).toMatch(/^acme-[a-z0-9]{5}$/);
    expect(names[0]).not.toBe(names[1]);
  });

  it('uses TOLLGATE_CONFIG, else ./data/tollgate.yaml, and the configured key prefix', async () => {
    const viaEnv = await scratchFile('via-env.yaml', commented);
    const run = await tollgate(['keys', 'create', '--account', 'acme', '--name', 'env-key'], { env: { TOLLGATE_CONFIG: viaEnv, TOLLGATE_KEY_PREFIX: 'acme' } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toMatch(/^acme_sk_[A-Za-z0-9_-]{43}$/);
    expect(await readFile(viaEnv, 'utf8')).toContain(hashKey(run.stdout.trim()));

    const cwd = path.join(scratch, 'project');
    await mkdir(path.join(cwd, 'data'), { recursive: true });
    await writeFile(path.join(cwd, 'data', 'tollgate.yaml'), commented);
    const local = await tollgate(['keys', 'create', '--account', 'acme', '--name', 'local-key', '--prefix', 'xy'], { cwd });
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout.trim()).toMatch(/^xy_sk_/);
    expect(await readFile(path.join(cwd, 'data', 'tollgate.yaml'), 'utf8')).toContain(hashKey(local.stdout.trim()));
  });

  it('-o yaml writes nothing, prints a valid ApiKey manifest on stdout and the key on stderr', async () => {
    const missing = path.join(scratch, 'never-created.yaml');
    const run = await tollgate(['keys', 'create', '--account', 'cluster-co', '-o', 'yaml', '--expires-at', '2099-01-01T00:00:00Z'], { env: { TOLLGATE_CONFIG: missing } });
    expect(run.code, run.stderr).toBe(0);
    const manifest = parse(run.stdout);
    const checked = validateManifest(manifest);
    expect(checked.ok, JSON.stringify(checked)).toBe(true);
    expect(manifest).toMatchObject({ kind: 'ApiKey', metadata: { name: expect.stringMatching(/^cluster-co-[a-z0-9]{5}$/) }, spec: { account: 'cluster-co', expiresAt: '2099-01-01T00:00:00Z' } });
    const key = run.stderr.match(/tg_sk_[A-Za-z0-9_-]{43}/)?.[0];
    expect(key).toBeDefined();
    expect(manifest.spec.keyHash).toBe(hashKey(key!));
    expect(run.stdout).not.toContain(key);
    expect(occurrences(run.stderr, key!)).toBe(1);
    await expect(readFile(missing)).rejects.toThrow(/ENOENT/);
  });

  it('refuses to append to a file the gateway would refuse, or one that does not exist', async () => {
    const broken = await scratchFile('broken-for-keys.yaml', `${commented}---\nkind: Model\n`);
    const run = await tollgate(['keys', 'create', '--account', 'acme', '--file', broken]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/is invalid; fix it first/);
    const absent = await tollgate(['keys', 'list', '--file', path.join(scratch, 'absent.yaml')]);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toMatch(/does not exist/);
  });
});

describe('tollgate validate', () => {
  it('reports document, line, kind/name and field for every problem, and exits 1', async () => {
    const file = await scratchFile(
      'broken.yaml',
      toYaml([
        plan('pro', ['gpt-4o']),
        { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'gpt-4o' }, spec: { targets: [] } },
        { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'typo' }, spec: { models: [], limits: { requestPerMinute: 5 } } },
        { apiVersion: 'tollgate.dev/v1alpha1', kind: 'ApiKey', metadata: { name: 'k' }, spec: { account: 'acme', keyHash: 'md5:abc' } },
      ]),
    );
    const run = await tollgate(['validate', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/document 2 \(line \d+\) Model gpt-4o: spec\.targets must NOT have fewer than 1 items/);
    expect(run.stderr).toMatch(/document 3 \(line \d+\) Plan typo: spec\.limits\.requestPerMinute is not a known field/);
    expect(run.stderr).toMatch(/document 4 \(line \d+\) ApiKey k: spec\.keyHash must match pattern/);
    expect(run.stderr).toMatch(/invalid, 3 problems/);
    expect(run.stdout).toBe('');
  });

  it('reports YAML syntax errors with their document', async () => {
    const file = await scratchFile('syntax.yaml', '---\napiVersion: tollgate.dev/v1alpha1\nkind: Plan\nmetadata: {name: pro\n');
    const run = await tollgate(['validate', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/document 1 \(line \d+\): YAML syntax/);
  });

  it('prints a one-line summary and exits 0 for a valid file, warning about dangling references', async () => {
    const file = await scratchFile('valid.yaml', toYaml([plan('pro', ['gpt-4o*']), account('acme', 'pro'), account('lost', 'gold')]));
    const run = await tollgate(['validate', file]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${file}: valid (1 Plan, 2 Accounts)\n`);
    expect(run.stderr).toMatch(/warning: Account lost: plan gold does not exist/);
  });
});

describe('tollgate crds', () => {
  it('prints every CRD, and -o DIR writes the files the chart ships', async () => {
    const printed = await tollgate(['crds']);
    expect(printed.code).toBe(0);
    expect(occurrences(printed.stdout, 'kind: CustomResourceDefinition')).toBe(5);
    const dir = path.join(scratch, 'crds-out');
    const written = await tollgate(['crds', '-o', dir]);
    expect(written.code, written.stderr).toBe(0);
    const names = (await readdir(dir)).sort();
    expect(names).toEqual((await readdir(CHART_CRDS)).filter((n) => n.endsWith('.yaml')).sort());
    for (const name of names) expect(await readFile(path.join(dir, name), 'utf8')).toBe(await readFile(path.join(CHART_CRDS, name), 'utf8'));
  });
});

describe('tollgate usage', () => {
  it.each([[['--help']], [['help']], [['help', 'keys', 'create']], [['keys', '--help']], [['keys', 'revoke', '-h']], [['validate', '--help']], [['crds', '--help']]])(
    '%j prints help on stdout and exits 0',
    async (args) => {
      const run = await tollgate(args);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/Usage/);
      expect(run.stderr).toBe('');
    },
  );

  it.each([
    [[], /missing command/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['--verbose'], /unknown option "--verbose"/],
    [['keys'], /missing subcommand/],
    [['keys', 'rotate'], /unknown command "keys rotate"/],
    [['keys', 'create', '--account', 'a', '--colour', 'red'], /Unknown option '--colour'/],
    [['keys', 'create'], /--account is required/],
    [['keys', 'create', '--account', 'a', '-o', 'json'], /only output format is yaml/],
    [['keys', 'revoke'], /missing argument/],
    [['keys', 'list', 'extra'], /unexpected argument "extra"/],
    [['validate', 'a.yaml', 'b.yaml'], /unexpected argument "b.yaml"/],
  ])('%j: usage on stderr, exit 2', async (args, message) => {
    const run = await tollgate(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/Usage/);
    expect(run.stdout).toBe('');
  });

  it('the bin launcher runs the CLI on this Node', async () => {
    const run = await tollgate(['--help'], { script: LAUNCHER });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/tollgate keys create/);
  });
});
