// `npm run image:test`: builds the image (scripts/image-build.sh, FROM the local node:24-bookworm-slim
// equivalent of scripts/image-base.sh) and proves with podman what the chart relies on: the gateway
// starts on a read-only root as a non-root user, /readyz answers, the official SDK gets a chat
// completion through it (in-process and from an upstream outside the container), and SIGTERM lets an
// open stream finish before the process exits 0. Each check prints one line; the first failure stops.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { FakeKubeApiServer } from '../test/fakes/kube-apiserver.ts';
import { startFakeUpstream } from '../test/fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, toYaml, upstream } from '../test/helpers/gateway.ts';
import { waitFor } from '../test/helpers/wait.ts';
import { missingImageTools, missingToolsMessage } from './image-tools.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PODMAN = path.join(ROOT, 'scripts/image-podman.sh');
const started = Date.now();
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;
const ok = (what: string) => console.log(`ok - ${what}`);

async function podman(...args: string[]): Promise<string> {
  return (await run(PODMAN, args, { maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
}
async function podmanFails(...args: string[]): Promise<string> {
  const outcome = await run(PODMAN, args).then(
    () => undefined,
    (error: { stderr?: string }) => error.stderr ?? '',
  );
  assert.notEqual(outcome, undefined, `podman ${args.join(' ')} succeeded; it must fail`);
  return outcome!;
}

// podman refuses ulimits above the calling shell's (and crun, on these machines, an nproc in the tens of
// thousands even below it); the test needs few of either.
async function limits(): Promise<string[]> {
  const { stdout } = await run('bash', ['-c', 'ulimit -n; ulimit -u']);
  const [files, procs] = stdout.trim().split('\n').map((v, i) => Math.min(v === 'unlimited' ? Infinity : Number(v), i === 0 ? 8192 : 4096));
  return ['--ulimit', `nofile=${files}:${files}`, '--ulimit', `nproc=${procs}:${procs}`];
}

// 0. The tools, before anything is built or started.
const missing = missingImageTools();
if (missing.length > 0) {
  console.error(missingToolsMessage(missing));
  process.exit(1);
}

// 1. Build. The build's own output goes to stderr; stdout is the image name.
const buildStart = Date.now();
const image = await new Promise<string>((resolve, reject) => {
  const child = spawn('bash', [path.join(ROOT, 'scripts/image-build.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.on('exit', (code) => (code === 0 ? resolve(out.trim().split('\n').pop()!) : reject(new Error(`image build failed (exit ${code})`))));
});
const inspected = JSON.parse(await podman('image', 'inspect', image))[0];
const sizeMB = Math.round(inspected.Size / 1e6);
ok(`built ${image} in ${seconds(buildStart)}: ${sizeMB} MB`);

const config = inspected.Config;
assert.match(config.User, /^[1-9]\d*(:\d+)?$/, 'the image runs as a numeric non-root user');
assert.equal(config.StopSignal, 'SIGTERM');
assert.deepEqual(config.Cmd, ['tollgate-gateway']);
for (const label of ['title', 'version', 'revision', 'source', 'licenses', 'base.name']) assert.ok(config.Labels[`org.opencontainers.image.${label}`], `OCI label ${label}`);
ok(`image config: user ${config.User}, STOPSIGNAL SIGTERM, OCI labels, default command tollgate-gateway`);

// 2. A slow upstream on the host's loopback (reached from the container through slirp4netns), a key,
// and the manifests mounted read-only as the gateway's file.
const slow = await startFakeUpstream('slow', { chunks: 20, chunkIntervalMs: 100, text: 'streamed' });
const key = newKey('image-test', 'acme');
const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-image-'));
const hostLoopback = slow.url.replace('127.0.0.1', '10.0.2.2');
await writeFile(
  path.join(dir, 'tollgate.yaml'),
  toYaml([upstream('slow', hostLoopback, 'SLOW_API_KEY'), model('slow-model', [{ upstream: 'slow' }]), plan('pro', ['slow-model', 'service-test']), account('acme', 'pro'), apiKey(key)]),
);
// The container's user (not the host's) reads the mount.
await chmod(dir, 0o755);
await chmod(path.join(dir, 'tollgate.yaml'), 0o644);
const ulimits = await limits();
let container = '';
let operator = '';
try {
  container = await podman(
    'run', '--detach', '--read-only', ...ulimits,
    '--network', 'slirp4netns:allow_host_loopback=true', '--publish', '127.0.0.1::8080', '--publish', '127.0.0.1::9464',
    '--volume', `${dir}:/etc/tollgate:ro`,
    '--env', 'TOLLGATE_CONFIG=/etc/tollgate/tollgate.yaml', '--env', 'TOLLGATE_BOOTSTRAP_KEY=false',
    '--env', 'SLOW_API_KEY=sk-upstream-secret', '--env', 'TOLLGATE_SHUTDOWN_GRACE_MS=20000',
    image,
  );
  const published = (await podman('port', container, '8080/tcp')).split('\n')[0];
  const base = `http://${published}`;

  // 3. Ready, then served.
  const runStart = Date.now();
  await waitFor(
    async () => {
      if ((await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200) return true;
      assert.equal(await podman('inspect', '--format', '{{.State.Running}}', container), 'true', 'the container exited before it was ready');
      return false;
    },
    60_000,
    `${base}/readyz to answer 200`,
  );
  ok(`/readyz answers 200 ${seconds(runStart)} after podman run`);

  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key.key, maxRetries: 0 });
  const completion = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Hello from the image test' }] });
  assert.equal(completion.object, 'chat.completion');
  assert.ok(completion.choices[0].message.content, 'the answer has content');
  const proxied = await client.chat.completions.create({ model: 'slow-model', messages: [{ role: 'user', content: 'Hi' }] });
  assert.equal(proxied.choices[0].message.content, 'streamed');
  assert.equal(slow.requests.at(-1)?.headers.authorization, 'Bearer sk-upstream-secret');
  ok('the official SDK gets chat completions: service-test in-process, slow-model from an upstream outside the container');

  // The metrics listener the chart's metrics Service and the operator's usage roll-up use.
  const metricsBase = `http://${(await podman('port', container, '9464/tcp')).split('\n')[0]}`;
  const metrics = await fetch(`${metricsBase}/metrics`);
  assert.equal(metrics.status, 200);
  assert.match(await metrics.text(), /^tollgate_http_requests_total\{/m);
  const usage = await (await fetch(`${metricsBase}/usage`)).json();
  assert.equal(usage.scope, 'replica');
  assert.equal(usage.accounts.acme.requests, 2, 'GET /usage counts the two completions of account acme');
  ok('port 9464 serves /metrics and GET /usage (the chart\'s metrics Service and the operator read them)');

  // 4. Not root, and the root file system is read-only (the data directory is the one writable path).
  const status = await podman('exec', container, 'cat', '/proc/1/status');
  const uids = status.match(/^Uid:\s+(.*)$/m)![1].trim().split(/\s+/);
  assert.ok(uids.every((uid) => uid !== '0'), `PID 1 runs as uid ${uids.join('/')}`);
  assert.match(await podman('exec', container, 'cat', '/proc/1/cmdline'), /^node\0/, 'PID 1 is node itself (the launcher execs it)');
  for (const target of ['/probe', '/app/probe', '/etc/probe']) {
    const refused = await podmanFails('exec', container, 'sh', '-c', `echo x > ${target}`);
    assert.match(refused, /Read-only file system/, `writing ${target}`);
  }
  await podman('exec', container, 'sh', '-c', 'echo x > /var/lib/tollgate/probe && rm /var/lib/tollgate/probe');
  ok(`PID 1 is node as uid ${uids[0]}; writing to /, /app and /etc fails (read-only), /var/lib/tollgate is writable`);

  await podman('exec', container, 'tollgate', '--help');
  await podman('exec', container, 'sh', '-c', 'command -v tollgate-operator');
  ok('the image carries the tollgate CLI and the tollgate-operator command');

  // 5. The same image as the operator, against the fake Kubernetes API server on the host.
  const kube = await new FakeKubeApiServer().listen();
  try {
    await writeFile(path.join(dir, 'kubeconfig'), kube.kubeconfig('tollgate').replaceAll('127.0.0.1', '10.0.2.2'), { mode: 0o644 });
    operator = await podman(
      'run', '--detach', '--read-only', ...ulimits,
      '--network', 'slirp4netns:allow_host_loopback=true', '--publish', '127.0.0.1::8081',
      '--volume', `${dir}:/etc/kube:ro`, '--env', 'KUBECONFIG=/etc/kube/kubeconfig',
      '--env', 'TOLLGATE_NAMESPACE=tollgate', '--env', 'POD_NAME=operator-0',
      image, 'tollgate-operator',
    );
    const operatorBase = `http://${(await podman('port', operator, '8081/tcp')).split('\n')[0]}`;
    await waitFor(
      async () => {
        if ((await fetch(`${operatorBase}/readyz`).catch(() => undefined))?.status === 200) return true;
        assert.equal(await podman('inspect', '--format', '{{.State.Running}}', operator), 'true', 'the operator exited before it was ready');
        return false;
      },
      60_000,
      'the operator /readyz to answer 200',
    );
    await waitFor(async () => (await (await fetch(`${kube.url}/apis/coordination.k8s.io/v1/namespaces/tollgate/leases/tollgate-operator`)).json()).spec?.holderIdentity === 'operator-0', 30_000, 'operator-0 to hold the Lease');
    await podman('kill', '--signal', 'TERM', operator);
    assert.equal(await podman('wait', operator), '0', 'the operator exit code after SIGTERM');
    ok(`\`tollgate-operator\` in the image: ready against the fake API server, leader on the Lease, exit 0 on SIGTERM`);
  } finally {
    await kube.close();
  }

  // 6. SIGTERM while a stream is open: the stream ends whole, then the process exits 0.
  const stream = await client.chat.completions.create({ model: 'slow-model', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
  const chunks: string[] = [];
  let finish: string | null = null;
  let first = () => {};
  const firstChunk = new Promise<void>((resolve) => (first = resolve));
  // Settled into a value at once: a cut stream must fail the check below, not crash the process.
  const reading = (async () => {
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta?.content) chunks.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
      first();
    }
  })().then(
    () => undefined,
    (error: Error) => error,
  );
  await Promise.race([firstChunk, reading]);
  const stopStart = Date.now();
  await podman('kill', '--signal', 'TERM', container);
  const cut = await reading;
  assert.equal(cut, undefined, `the open stream was cut after ${chunks.length} chunks by SIGTERM (${cut?.message}); the gateway must drain it`);
  // The SDK's iterator ends quietly on a cut connection too, so count: every chunk, then finish_reason.
  assert.deepEqual(chunks, Array.from({ length: 20 }, (_, i) => `slow-${i} `), 'the open stream got every chunk after SIGTERM');
  assert.equal(finish, 'stop', 'the stream ended with its finish_reason');
  const exitCode = await podman('wait', container);
  assert.equal(exitCode, '0', 'exit code after SIGTERM');
  ok(`SIGTERM during a stream: it finished (${chunks.length} chunks), then exit 0 ${seconds(stopStart)} after the signal`);

  const logs = await podman('logs', container);
  assert.ok(!logs.includes(key.key), 'the client key never reaches the log');
  assert.ok(!logs.includes('sk-upstream-secret'), 'the upstream key never reaches the log');
  ok('neither the client key nor the upstream key appears in the container log');

} catch (error) {
  for (const id of [container, operator]) if (id) console.error(`--- container log (${id.slice(0, 12)}) ---\n${await podman('logs', id).catch(() => '(none)')}`);
  throw error;
} finally {
  for (const id of [container, operator]) if (id) await podman('rm', '--force', '--volumes', id).catch(() => undefined);
  await slow.close();
  await rm(dir, { recursive: true, force: true });
}
console.log(`image:test passed in ${seconds(started)} (image ${sizeMB} MB)`);
