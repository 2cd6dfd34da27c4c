// `npm run bench` (from the repository root): Tollgate against the floor, a bare Node.js pass-through
// proxy, on loopback, in one run. Every figure that is compared is measured in the same run with the
// two targets interleaved (A B, then B A), so machine noise falls on both alike.
//   --quick            short durations, fewer keys: a smoke test of the harness (~2 minutes)
//   --profile          instead of the bench: Tollgate under --cpu-prof for the chat and stream scenarios
//   --only a,b         only these scenarios (ids: chat, stream20, stream64, embeddings, delay, vision, translated, translated-stream, service-test)
//   --no-scale         skip the 100,000-key and 1,000-stream checks
//   --rounds N         throughput rounds per scenario (default 4, and at least one per target): more
//                      rounds narrow the medians of the paired CPU ratios on a noisy machine
//   --skip-keys        keep the 1,000-stream check, skip the 10 / 100,000-key comparison
//   --keys N           ApiKeys in the main Tollgate (default 10,000)
//   --scale-keys N     ApiKeys in the scale instance (default 100,000)
//   --ready-timeout S  how long a Tollgate may take to become ready (default 120)
//   --node-args "…"    extra Node.js flags for the main Tollgate, e.g. "--trace-gc" (implies --keep-logs)
//   --keep-logs        copy the gateways' logs (stdout and stderr) to bench/results/
//   --redis            instead: single-process vs shared mode (a redis-server on loopback), bench/redis.ts
//   --baseline REF     also the gateway of commit REF (HEAD~3, e73ba07 …), as a third target in every
//                      scenario (interleaved: A B C, then C B A), same manifests, env and Node.js flags;
//                      adds a current-vs-baseline table. Not in the key-scale check. With --profile: REF is
//                      profiled too, in the same run, into profile-<time>-<REF>/ (compare with profile-compare.ts).
//   --no-telemetry-variants  skip the two telemetry variants below (faster).
//   --control          a fourth gateway configured exactly as Tollgate (an A/A test): the telemetry table
//                      then shows the run's own noise next to each cost.
//   --twins            (implies --control) a second process of each telemetry variant: the telemetry
//                      table adds each cost pooled over two processes per configuration, which averages
//                      out what belongs to one process (its placement, JIT and heap) rather than to the moment.
//   --pin              bind the gateways to the last CPU and this harness, the upstream, the floor and the
//                      sink to the others (taskset; 2 CPUs or more), so their CPU figures do not move
//                      with where the scheduler put them.
//   --tracing-split    a third variant: tracing on with nothing sampled (OTEL_TRACES_SAMPLER=always_off),
//                      which splits tracing's cost into what every request pays and what sampled ones add.
//   --profile-telemetry off|tracing-off  with --profile: the gateway with metrics and tracing off (the
//                      request path alone), or with tracing off, instead of as benchmarked.
// Tollgate runs with metrics on and tracing on (OTLP/HTTP protobuf to a local sink, 10% parent-based
// sampling). Two variants run in the same rounds, on the same manifests: tracing off (metrics on) and
// telemetry off (metrics and tracing off); the "Telemetry cost" table compares CPU per request.
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir, cpus, totalmem, release } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchManifests, UPSTREAM_SECRET_ENV } from './lib/manifests.ts';
import { concurrentStreams, paced, throughput, type Load, type PacedResult, type StreamsResult, type Target, type ThroughputResult } from './lib/load.ts';
import { cpuSeconds, forkService, mainThreadCpuSeconds, pinning, pinProcess, peakRssBytes, resetPeakRss, rssBytes, startTollgate, type Service, type TollgateProcess } from './lib/procs.ts';
import { BENCH_MODELS, longStream, scenarios, type Scenario } from './lib/scenarios.ts';
import { TELEMETRY_VARIANTS, tracingEnv, UNSAMPLED_VARIANT } from './lib/telemetry-variants.ts';
import { percentiles } from './lib/stats.ts';
import { formatSummary, summarise, type Profile } from './profile-summary.ts';
import { phasesTable, type Phases } from './snapshot-phases.ts';
import { checkoutBaseline, type Baseline } from './lib/baseline.ts';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const SECRET = 'bench-upstream-secret-0123456789';
const MAX_CONNECTIONS = 2000;
const MB = 1024 * 1024;

interface Options {
  quick: boolean;
  profile: boolean;
  scale: boolean;
  only: string[] | null;
  keys: number;
  scaleKeys: number;
  readyTimeoutMs: number;
  durationS: number;
  rounds: number;
  pacedMs: number;
  warmupS: number;
  /** At most this many warm-up runs of warmupS per target and scenario (see warmUp). */
  warmupRuns: number;
  streams: number;
  /** Extra Node.js flags for the main Tollgate (e.g. --trace-gc). */
  nodeArgs: string[];
  keepLogs: boolean;
  skipKeys: boolean;
  /** --baseline REF: a commit-ish whose gateway is measured alongside the current one. */
  baseline: string | null;
  /** Run the tracing-off and telemetry-off variants in the same rounds. */
  telemetryVariants: boolean;
  /** --twins: a second process of each telemetry variant (with --control, of every configuration). */
  twins: boolean;
  /** --control: an A/A twin of Tollgate in the same rounds. */
  control: boolean;
  /** --pin: gateways on the last CPU, everything else on the others. */
  pin: boolean;
  /** Also the unsampled-tracing variant (--tracing-split). */
  tracingSplit: boolean;
  /** --profile-telemetry: which gateway --profile runs. */
  profileTelemetry: 'on' | 'off' | 'tracing-off';
}

function parseOptions(argv: string[]): Options {
  const flag = (name: string) => argv.includes(name);
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : argv[i + 1];
  };
  const quick = flag('--quick');
  return {
    quick,
    profile: flag('--profile'),
    scale: !flag('--no-scale'),
    only: value('--only')?.split(',') ?? null,
    keys: Number(value('--keys') ?? (quick ? 1000 : 10_000)),
    scaleKeys: Number(value('--scale-keys') ?? (quick ? 10_000 : 100_000)),
    readyTimeoutMs: Number(value('--ready-timeout') ?? 120) * 1000,
    // Several short rounds rather than two long ones: bursts of noise from other work on the machine
    // then fall on both targets.
    durationS: quick ? 2 : 3,
    rounds: Number(value('--rounds') ?? (quick ? 1 : 4)),
    pacedMs: quick ? 2000 : 8000,
    warmupS: quick ? 0.5 : 2,
    warmupRuns: quick ? 1 : 10,
    streams: 1000,
    nodeArgs: value('--node-args')?.split(' ').filter(Boolean) ?? [],
    keepLogs: flag('--keep-logs') || value('--node-args') !== undefined,
    skipKeys: flag('--skip-keys'),
    baseline: baselineRef(argv),
    telemetryVariants: !flag('--no-telemetry-variants'),
    tracingSplit: flag('--tracing-split'),
    pin: flag('--pin'),
    control: flag('--control') || flag('--twins'),
    twins: flag('--twins'),
    profileTelemetry: (['off', 'tracing-off'] as const).find((v) => v === value('--profile-telemetry')) ?? ('on' as const),
  };
}

function baselineRef(argv: string[]): string | null {
  const i = argv.indexOf('--baseline');
  if (i === -1) return null;
  const ref = argv[i + 1];
  if (!ref || ref.startsWith('--')) throw new Error('--baseline needs a commit-ish: --baseline HEAD~3');
  return ref;
}

interface Side {
  rps: number[];
  samples: number[];
  requests: number;
  cpuSeconds: number;
  peakRss: number;
  errors: number;
  paced: { latencies: number[]; firsts: number[]; transits: number[]; failed: number; problems: string[] };
  /** CPU ms per request of each throughput round, in round order (for paired ratios). */
  cpuRounds: number[];
  /** The fixed-rate runs (scenario.cpuRate): CPU seconds and answered requests, and CPU ms/req per round. */
  fixedRate: { cpuSeconds: number; mainCpuSeconds: number; requests: number; failed: number; rounds: number[] };
}

interface ScenarioResult {
  scenario: Scenario;
  floor: Side | null;
  tollgate: Side;
  /** The gateway of --baseline REF, measured in the same rounds. */
  baseline: Side | null;
  /** The telemetry variants (TELEMETRY_VARIANTS order, then --tracing-split's and --control's), measured in the same rounds. */
  variants: Side[];
  /** By variant name. */
  variant: Map<string, Side>;
}

/**
 * --control: a second gateway configured exactly as Tollgate (an A/A test). The two differ only by
 * chance, so their difference is how far this run's own noise goes: a cost smaller than it is not
 * measured by the run.
 */
const CONTROL_VARIANT = { name: 'tollgate-control', label: 'the same as Tollgate (control)', env: {} } as const;

/** --twins: the telemetry variants again, in processes of their own. */
const TWIN_VARIANTS = TELEMETRY_VARIANTS.map((variant) => ({ name: `${variant.name}-twin`, label: `${variant.label} (a second process)`, env: variant.env }));

const newSide = (): Side => ({ rps: [], samples: [], requests: 0, cpuSeconds: 0, peakRss: 0, errors: 0, paced: { latencies: [], firsts: [], transits: [], failed: 0, problems: [] }, cpuRounds: [], fixedRate: { cpuSeconds: 0, mainCpuSeconds: 0, requests: 0, failed: 0, rounds: [] } });

const log = (text: string) => process.stderr.write(`${text}\n`);

/** One autocannon run with the target's CPU and peak RSS read around it. */
async function measureThroughput(target: Target & { pid: number }, load: Load, side: Side, connections: number, durationS: number, keys: string[]): Promise<ThroughputResult> {
  resetPeakRss(target.pid);
  const cpuBefore = cpuSeconds(target.pid);
  const result = await throughput(target, load, { connections, durationS, keys });
  const cpu = cpuSeconds(target.pid) - cpuBefore;
  side.cpuSeconds += cpu;
  side.cpuRounds.push((cpu * 1000) / Math.max(1, result.requests));
  side.peakRss = Math.max(side.peakRss, peakRssBytes(target.pid));
  side.rps.push(result.rps);
  side.requests += result.requests;
  for (const s of result.samples) side.samples.push(s);
  side.errors += result.errors + result.non2xx;
  return result;
}

/**
 * CPU per request at the scenario's fixed rate, every gateway at once: each gets the same requests
 * at the same rate during the same seconds, so whatever else the machine does falls on all of them
 * alike and their figures compare round by round. An unmeasured second first.
 */
async function measureFixedRateTogether(targets: Array<[Target & { pid: number }, Side]>, scenario: Scenario, durationMs: number, keys: string[]): Promise<void> {
  const rate = scenario.cpuRate!;
  await Promise.all(targets.map(([target]) => paced(target, scenario, { rate, durationMs: 1000, warmupMs: 0, keys })));
  const before = targets.map(([target]) => ({ all: cpuSeconds(target.pid), main: mainThreadCpuSeconds(target.pid) }));
  const results = await Promise.all(targets.map(([target]) => paced(target, scenario, { rate, durationMs, warmupMs: 0, keys })));
  targets.forEach(([target, side], i) => {
    const cpu = cpuSeconds(target.pid) - before[i].all;
    const answered = results[i].latencies.length;
    side.fixedRate.cpuSeconds += cpu;
    side.fixedRate.mainCpuSeconds += mainThreadCpuSeconds(target.pid) - before[i].main;
    side.fixedRate.requests += answered;
    side.fixedRate.failed += results[i].failed;
    side.fixedRate.rounds.push((cpu * 1000) / Math.max(1, answered));
  });
}

async function measurePaced(target: Target, scenario: Scenario, side: Side, durationMs: number, warmupMs: number, keys: string[]): Promise<PacedResult> {
  const result = await paced(target, scenario, { rate: scenario.rate, durationMs, warmupMs, keys });
  for (const s of result.latencies) side.paced.latencies.push(s);
  for (const s of result.firsts) side.paced.firsts.push(s);
  for (const s of result.transits) side.paced.transits.push(s);
  side.paced.failed += result.failed;
  side.paced.problems.push(...result.problems);
  return result;
}

/**
 * Load until the target's CPU per request stops falling: a gateway keeps getting cheaper for tens of
 * seconds after it starts (V8 optimising the request path, its young generation growing to its
 * size), and a target measured while still warming looks more expensive than one measured later.
 * Two successive runs within 5% of each other, or at most `warmupRuns` runs.
 */
async function warmUp(target: Target & { pid: number }, scenario: Scenario, keys: string[], options: Options): Promise<void> {
  let previous = Infinity;
  for (let run = 0; run < options.warmupRuns; run++) {
    const cpuBefore = cpuSeconds(target.pid);
    const r = await throughput(target, scenario, { connections: scenario.connections, durationS: options.warmupS, keys });
    const perRequest = (cpuSeconds(target.pid) - cpuBefore) / Math.max(1, r.requests);
    if (Math.abs(perRequest - previous) <= 0.05 * previous) return;
    previous = perRequest;
  }
}

async function runScenario(scenario: Scenario, floor: Service, tollgate: TollgateProcess, baseline: TollgateProcess | null, variants: TollgateProcess[], keys: string[], options: Options): Promise<ScenarioResult> {
  const result: ScenarioResult = { scenario, floor: scenario.tollgateOnly ? null : newSide(), tollgate: newSide(), baseline: baseline ? newSide() : null, variants: variants.map(newSide), variant: new Map() };
  variants.forEach((variant, i) => result.variant.set(variant.name, result.variants[i]));
  const targets: Array<[Service & { pid: number }, Side]> = [[tollgate, result.tollgate]];
  if (result.floor) targets.unshift([floor, result.floor]);
  if (baseline && result.baseline) targets.push([baseline, result.baseline]);
  variants.forEach((variant, i) => targets.push([variant, result.variants[i]]));
  // Each round starts one target later (A B C, B C A, C A B …), and there are at least as many rounds
  // as targets: every target runs once in every position and after every other one. Whatever a run
  // leaves behind (the shared upstream's garbage after the floor's 15,000 req/s, a drift of the
  // machine) then falls on all alike, and CPU is compared round by round (pairedRatio).
  // (--quick keeps its single round: a smoke test of the harness, not a measurement.)
  const rounds = options.quick ? options.rounds : Math.max(options.rounds, targets.length);
  const orderOf = (round: number) => [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)];
  const width = Math.max(8, ...targets.map(([t]) => t.name.length));
  log(`\n▶ ${scenario.label}`);
  for (const [target] of targets) await warmUp(target, scenario, keys, options);
  for (let round = 0; round < rounds; round++) {
    for (const [target, side] of orderOf(round)) {
      const r = await measureThroughput(target, scenario, side, scenario.connections, options.durationS, keys);
      log(`  ${target.name.padEnd(width)} ${r.rps.toFixed(0).padStart(6)} req/s, ${side.cpuRounds.at(-1)!.toFixed(3)} CPU ms/req${r.errors + r.non2xx ? `  (${r.errors} errors, ${r.non2xx} non-2xx)` : ''}`);
    }
  }
  for (let round = 0; round < rounds; round++) {
    for (const [target, side] of orderOf(round)) {
      const r = await measurePaced(target, scenario, side, options.pacedMs / rounds, round === 0 ? 500 : 0, keys);
      const p = percentiles(r.latencies);
      log(`  ${target.name.padEnd(width)} ${scenario.rate} req/s: p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms${r.failed ? `, ${r.failed} failed: ${r.problems[0]}` : ''}`);
    }
  }
  // The gateways (not the floor) together at the fixed rate: CPU compared within each round.
  const gateways = targets.filter(([target]) => target !== floor);
  if (scenario.cpuRate && gateways.length > 1) {
    for (let round = 0; round < rounds; round++) {
      await measureFixedRateTogether(gateways, scenario, options.durationS * 1000, keys);
      log(`  ${scenario.cpuRate} req/s each, together: ${gateways.map(([target, side]) => `${target.name} ${side.fixedRate.rounds.at(-1)!.toFixed(3)}`).join(', ')} CPU ms/req`);
    }
    // Which thread the CPU went to: JavaScript runs on the main thread, V8's collector partly beside it.
    log(`  main thread / all threads at ${scenario.cpuRate} req/s: ${gateways.map(([target, side]) => `${target.name} ${((side.fixedRate.mainCpuSeconds * 1000) / side.fixedRate.requests).toFixed(3)} / ${fixedCpuPerRequest(side).toFixed(3)}`).join(', ')} CPU ms/req`);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Scale: 1,000 concurrent streams, and 100,000 keys against 10.

interface StreamsFigure {
  target: string;
  result: StreamsResult;
  peakRss: number;
  rssBefore: number;
  /** CPU seconds the proxy used per second of the test: near 1, it is saturated and chunks queue. */
  cpuShare: number;
}

async function runStreams(target: Target & { pid: number }, keys: string[], count: number): Promise<StreamsFigure> {
  const rssBefore = rssBytes(target.pid);
  resetPeakRss(target.pid);
  const cpuBefore = cpuSeconds(target.pid);
  const result = await concurrentStreams(target, longStream(), { count, rampMs: 1000, keys });
  const figure = { target: target.name, result, peakRss: peakRssBytes(target.pid), rssBefore, cpuShare: (cpuSeconds(target.pid) - cpuBefore) / result.seconds };
  log(`  ${target.name.padEnd(8)} ${result.complete}/${result.opened} streams complete, ${result.maxOpen} open at once, peak RSS ${(figure.peakRss / MB).toFixed(0)} MB, ${(figure.cpuShare * 100).toFixed(0)}% of a core${result.failed ? `; ${result.failed} failed: ${result.problems.join(' | ')}` : ''}`);
  return figure;
}

interface KeysFigure {
  keys: number;
  readyMs: number | null;
  error?: string;
  rssReady: number;
  side: Side | null;
}

interface BenchTollgate {
  tollgate: TollgateProcess;
  keys: string[];
  configFile: string;
}

/**
 * A Tollgate on freshly generated manifests, or on those of another instance (`manifests`: the same
 * keys, as the baseline needs). `root` is the tree whose gateway/src/main.ts runs: the repository, or
 * the --baseline copy.
 */
async function startBenchTollgate(
  name: string,
  dir: string,
  upstream: Service,
  keyCount: number,
  options: Options,
  nodeArgs: string[] = [],
  from: { root?: string; manifests?: { configFile: string; keys: string[] }; what?: string; env?: Record<string, string> } = {},
): Promise<BenchTollgate> {
  const instanceDir = path.join(dir, name);
  await mkdir(instanceDir, { recursive: true });
  let configFile: string;
  let keys: string[];
  if (from.manifests) {
    ({ configFile, keys } = from.manifests);
    log(`starting ${name}${from.what ? ` (${from.what})` : ''}: the same ${keys.length.toLocaleString('en')} keys and manifests …`);
  } else {
    // The translated scenarios' model only when they run: a --baseline from before providers existed
    // refuses an Upstream with `provider`.
    const translated = !options.only || options.only.some((id) => id.startsWith('translated'));
    const models = BENCH_MODELS.filter((model) => translated || !model.startsWith('bench-claude'));
    const generated = benchManifests({ upstreamURL: `${upstream.origin}/v1`, models, keyCount, maxConnections: MAX_CONNECTIONS });
    // Not in the instance's directory, which holds its log: the file source watches the manifests'
    // directory, and every log write there would be an event for that gateway alone to filter.
    const manifestsDir = path.join(dir, `${name}-manifests`);
    await mkdir(manifestsDir, { recursive: true });
    configFile = path.join(manifestsDir, 'tollgate.yaml');
    keys = generated.keys;
    await writeFile(configFile, generated.yaml);
    log(`starting ${name}: ${keyCount.toLocaleString('en')} keys, ${(generated.yaml.length / MB).toFixed(1)} MB of manifests …`);
  }
  const tollgate = await startTollgate({
    name,
    root: from.root ?? ROOT,
    configFile,
    dataDir: path.join(instanceDir, 'data'),
    logFile: path.join(instanceDir, 'gateway.log'),
    env: { [UPSTREAM_SECRET_ENV]: SECRET, ...from.env },
    nodeArgs,
    readyTimeoutMs: options.readyTimeoutMs,
  });
  log(`  ${name} ready in ${(tollgate.readyMs / 1000).toFixed(2)} s, RSS ${(rssBytes(tollgate.pid) / MB).toFixed(0)} MB`);
  await serveServiceTestOnce(tollgate, keys[0]);
  return { tollgate, keys, configFile };
}

/**
 * One service-test answer from every Tollgate before anything is measured, so that all of them hold
 * the service-test tokenizer, as every deployment does whatever its version (any account may use the
 * model): gateways before de6d1b0 load it at their first service-test request, later ones at start-up.
 * Its table is marked by every full collection, which large bodies cause often (docs/benchmarks.md).
 */
async function serveServiceTestOnce(tollgate: TollgateProcess, key: string): Promise<void> {
  const response = await fetch(`${tollgate.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'service-test', messages: [{ role: 'user', content: 'warm up' }] }),
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${tollgate.name}: service-test answered ${response.status}`);
}

interface KeyScale {
  small: KeysFigure;
  large: KeysFigure;
  /** A fresh instance with options.keys, compared with the small one when the large one cannot start. */
  fallback: KeysFigure | null;
  phases: Phases | null;
}

async function runKeyScale(dir: string, upstream: Service, options: Options, streams: StreamsFigure[] | null): Promise<KeyScale> {
  log(`\n▶ keys: 10 against ${options.scaleKeys.toLocaleString('en')}`);
  const small: KeysFigure = { keys: 10, readyMs: null, rssReady: NaN, side: newSide() };
  const large: KeysFigure = { keys: options.scaleKeys, readyMs: null, rssReady: NaN, side: newSide() };
  let fallback: KeysFigure | null = null;
  const a = await startBenchTollgate('tollgate-10-keys', dir, upstream, 10, options);
  small.readyMs = a.tollgate.readyMs;
  small.rssReady = rssBytes(a.tollgate.pid);
  // The streams again on this fresh small instance: their memory without that of loading many keys.
  if (streams) streams.push(await runStreams({ ...a.tollgate, name: 'tollgate (10 keys)' }, a.keys, options.streams));
  let b: BenchTollgate | null = null;
  try {
    b = await startBenchTollgate(`tollgate-${options.scaleKeys}-keys`, dir, upstream, options.scaleKeys, options);
    large.readyMs = b.tollgate.readyMs;
    large.rssReady = rssBytes(b.tollgate.pid);
  } catch (error) {
    large.error = (error as Error).message;
    large.side = null;
    log(`  ${large.error}; comparing a fresh ${options.keys.toLocaleString('en')}-key instance instead`);
    fallback = { keys: options.keys, readyMs: null, rssReady: NaN, side: newSide() };
    b = await startBenchTollgate(`tollgate-${options.keys}-keys`, dir, upstream, options.keys, options);
    fallback.readyMs = b.tollgate.readyMs;
    fallback.rssReady = rssBytes(b.tollgate.pid);
  }
  const chat = scenarios().find((s) => s.id === 'chat')!;
  const sides: Array<[TollgateProcess, string[], Side]> = [
    [a.tollgate, a.keys, small.side!],
    [b.tollgate, b.keys, (fallback ?? large).side!],
  ];
  // Fresh processes: a longer warm-up, so the JIT is as warm as in the long-running main instance.
  for (const [t, keys] of sides) await throughput(t, chat, { connections: chat.connections, durationS: options.warmupS * 3, keys });
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const [t, keys, side] of order) {
      const r = await measureThroughput(t, chat, side, chat.connections, options.durationS, keys);
      log(`  ${t.name.padEnd(22)} ${r.rps.toFixed(0).padStart(6)} req/s, peak RSS ${(side.peakRss / MB).toFixed(0)} MB`);
    }
  }
  await a.tollgate.stop();
  await b.tollgate.stop();
  // Phase by phase, in a process of its own: what the start-to-ready time is made of.
  let phases: Phases | null = null;
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', path.join(BENCH_DIR, 'snapshot-phases.ts'), '--keys', String(options.scaleKeys), '--json'], { cwd: ROOT, maxBuffer: 1 << 20 });
    phases = (JSON.parse(stdout) as Phases[])[0];
    log(`  phases at ${options.scaleKeys.toLocaleString('en')} keys: parseManifests ${fmt(phases.manifestsMs ?? NaN)} ms (validation ${fmt(phases.validateMs ?? NaN)} ms), new Snapshot ${fmt(phases.snapshotMs ?? NaN)} ms`);
  } catch (error) {
    log(`  snapshot phases failed: ${(error as Error).message}`);
  }
  return { small, large, fallback, phases };
}

// ---------------------------------------------------------------------------------------------
// Tables.

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);
const pass = (ok: boolean) => (ok ? 'pass' : '**FAIL**');

const cpuPerRequest = (s: Side) => (s.cpuSeconds * 1000) / s.requests;
const fixedCpuPerRequest = (s: Side) => (s.fixedRate.cpuSeconds * 1000) / s.fixedRate.requests;

interface PairedRatio {
  median: number;
  low: number;
  high: number;
}

/**
 * a ÷ b round by round (both measured in the same round, one after the other), as the median of the
 * rounds with the lowest and highest: a drift or a burst of the machine's other work moves a round's
 * two figures together, where it moves totals over several rounds apart.
 */
function pairedRatio(a: number[], b: number[]): PairedRatio {
  const ratios = a.map((x, i) => x / b[i]).filter(Number.isFinite).sort((x, y) => x - y);
  if (ratios.length === 0) return { median: NaN, low: NaN, high: NaN };
  const mid = ratios.length >> 1;
  const median = ratios.length % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
  return { median, low: ratios[0], high: ratios.at(-1)! };
}

/** Two processes' per-round figures added, round by round. */
const summed = (a: number[], b: number[]) => a.map((x, i) => x + b[i]);

/** A cost as a percentage with its per-round range: "4.1% (−2.0 to 7.3)". */
const costText = (r: PairedRatio) => `${fmt((r.median - 1) * 100, 1)}% (${fmt((r.low - 1) * 100, 1)} to ${fmt((r.high - 1) * 100, 1)})`;

/** `label`: the baseline's name (Tollgate@abc1234) when --baseline ran; its columns are then added. */
function throughputTable(results: ScenarioResult[], label: string | null = null): string {
  const b = label !== null;
  const rows = [
    b
      ? `| scenario | conns | floor req/s | Tollgate req/s | ${label} req/s | ratio to floor, Tollgate / ${label} | floor p50 / p99 ms | Tollgate p50 / p99 ms | ${label} p50 / p99 ms | CPU ms/req floor / Tollgate / ${label} | peak RSS MB floor / Tollgate / ${label} |`
      : '| scenario | conns | floor req/s | Tollgate req/s | ratio | floor p50 / p99 ms | Tollgate p50 / p99 ms | CPU ms/req floor / Tollgate | peak RSS MB floor / Tollgate |',
    b ? '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|' : '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { scenario, floor, tollgate, baseline } of results) {
    const t = percentiles(tollgate.samples);
    const f = floor ? percentiles(floor.samples) : null;
    const ratio = (side: Side) => (floor ? fmt(mean(side.rps) / mean(floor.rps), 2) : '—');
    const pair = (p: { p50: number; p99: number } | null) => (p ? `${fmt(p.p50, 1)} / ${fmt(p.p99, 1)}` : '—');
    const cpu = (s: Side | null) => (s ? fmt(cpuPerRequest(s), 3) : '—');
    const rss = (s: Side | null) => (s ? fmt(s.peakRss / MB) : '—');
    const errors = `${tollgate.errors ? ` (${tollgate.errors} errors)` : ''}${b && baseline?.errors ? ` (${baseline.errors} errors at ${label})` : ''}`;
    if (!b || !baseline) {
      rows.push(
        `| ${scenario.label}${errors} | ${scenario.connections} | ${floor ? fmt(mean(floor.rps)) : '—'} | ${fmt(mean(tollgate.rps))} | ${ratio(tollgate)} | ${pair(f)} | ${pair(t)} | ${cpu(floor)} / ${cpu(tollgate)} | ${rss(floor)} / ${rss(tollgate)} |`,
      );
      continue;
    }
    rows.push(
      `| ${scenario.label}${errors} | ${scenario.connections} | ${floor ? fmt(mean(floor.rps)) : '—'} | ${fmt(mean(tollgate.rps))} | ${fmt(mean(baseline.rps))} | ${floor ? `${ratio(tollgate)} / ${ratio(baseline)}` : '—'} | ${pair(f)} | ${pair(t)} | ${pair(percentiles(baseline.samples))} | ${cpu(floor)} / ${cpu(tollgate)} / ${cpu(baseline)} | ${rss(floor)} / ${rss(tollgate)} / ${rss(baseline)} |`,
    );
  }
  return rows.join('\n');
}

function latencyTable(results: ScenarioResult[], label: string | null = null): string {
  const b = label !== null;
  const rows = [
    b
      ? `| scenario | rate req/s | floor p50 / p99 ms | Tollgate p50 / p99 ms | ${label} p50 / p99 ms | added p50 / p99 ms Tollgate | added p50 / p99 ms ${label} | first chunk added p50 / p99 ms Tollgate | first chunk added p50 / p99 ms ${label} | chunk transit floor / Tollgate / ${label} p50, p99 ms |`
      : '| scenario | rate req/s | floor p50 / p99 ms | Tollgate p50 / p99 ms | added p50 / p99 ms | first chunk added p50 / p99 ms | chunk transit floor / Tollgate p50, p99 ms |',
    b ? '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|' : '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { scenario, floor, tollgate, baseline } of results) {
    const f = floor ? percentiles(floor.paced.latencies) : null;
    const ff = floor ? percentiles(floor.paced.firsts) : null;
    const failed = tollgate.paced.failed + (floor?.paced.failed ?? 0) + (baseline?.paced.failed ?? 0);
    const pair = (p: { p50: number; p99: number }) => `${fmt(p.p50, 2)} / ${fmt(p.p99, 2)}`;
    const added = (side: Side) => {
      const t = percentiles(side.paced.latencies);
      return f ? `${fmt(t.p50 - f.p50, 2)} / ${fmt(t.p99 - f.p99, 2)}` : '—';
    };
    const first = (side: Side) => {
      const tf = percentiles(side.paced.firsts);
      return ff && scenario.streamChunks !== undefined ? `${fmt(tf.p50 - ff.p50, 2)} / ${fmt(tf.p99 - ff.p99, 2)}` : '—';
    };
    const ft = floor ? percentiles(floor.paced.transits) : null;
    const transits = [tollgate, ...(b && baseline ? [baseline] : [])].map((side) => percentiles(side.paced.transits));
    const transit = ft && ft.count > 0 ? `${[ft, ...transits].map((p) => fmt(p.p50, 2)).join(' / ')}, ${[ft, ...transits].map((p) => fmt(p.p99, 2)).join(' / ')}` : '—';
    const head = `| ${scenario.label}${failed ? ` (${failed} failed)` : ''} | ${scenario.rate} | ${f ? pair(f) : '—'} | ${pair(percentiles(tollgate.paced.latencies))}`;
    if (!b || !baseline) rows.push(`${head} | ${added(tollgate)} | ${first(tollgate)} | ${transit} |`);
    else rows.push(`${head} | ${pair(percentiles(baseline.paced.latencies))} | ${added(tollgate)} | ${added(baseline)} | ${first(tollgate)} | ${first(baseline)} | ${transit} |`);
  }
  return rows.join('\n');
}

/**
 * --baseline: the figures an optimisation is judged by, current against baseline, both measured in
 * the same rounds. The per-round range of the throughput ratio shows how far noise moved it.
 */
function baselineTable(results: ScenarioResult[], label: string): string {
  const rows = [
    `| scenario | req/s Tollgate / ${label} | ratio | per-round ratios | CPU ms/req Tollgate / ${label} | CPU ratio, median of rounds (range) | CPU ms/req at the fixed rate, Tollgate / ${label} | CPU ratio at the fixed rate, median (range) | p50 / p99 ms at the latency rate, Tollgate | p50 / p99 ms at the latency rate, ${label} |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const ratioText = (r: PairedRatio) => `${fmt(r.median, 2)} (${fmt(r.low, 2)}–${fmt(r.high, 2)})`;
  for (const { scenario, tollgate, baseline } of results) {
    if (!baseline) continue;
    const perRound = tollgate.rps.map((rps, i) => rps / baseline.rps[i]);
    const range = perRound.length > 1 ? `${fmt(Math.min(...perRound), 2)}–${fmt(Math.max(...perRound), 2)}` : '—';
    const t = percentiles(tollgate.paced.latencies);
    const p = percentiles(baseline.paced.latencies);
    const fixed = scenario.cpuRate ? `${fmt(fixedCpuPerRequest(tollgate), 3)} / ${fmt(fixedCpuPerRequest(baseline), 3)} at ${scenario.cpuRate} req/s | ${ratioText(pairedRatio(tollgate.fixedRate.rounds, baseline.fixedRate.rounds))}` : '— | —';
    rows.push(
      `| ${scenario.label} | ${fmt(mean(tollgate.rps))} / ${fmt(mean(baseline.rps))} | ${fmt(mean(tollgate.rps) / mean(baseline.rps), 2)} | ${range} | ${fmt(cpuPerRequest(tollgate), 3)} / ${fmt(cpuPerRequest(baseline), 3)} | ${ratioText(pairedRatio(tollgate.cpuRounds, baseline.cpuRounds))} | ${fixed} | ${fmt(t.p50, 2)} / ${fmt(t.p99, 2)} | ${fmt(p.p50, 2)} / ${fmt(p.p99, 2)} |`,
    );
  }
  return rows.join('\n');
}

/**
 * What telemetry costs, from the same rounds: tracing = Tollgate (metrics + tracing) against the
 * tracing-off variant; metrics = tracing-off against telemetry-off. Each as the median of the
 * per-round CPU ratios, with their range, at saturation (the throughput runs) and at the scenario's
 * fixed rate; throughput is shown beside it.
 */
function telemetryTable(results: ScenarioResult[]): string {
  const split = results.some((r) => r.variant.has(UNSAMPLED_VARIANT.name));
  const control = results.some((r) => r.variant.has(CONTROL_VARIANT.name));
  const twins = results.some((r) => r.variant.has(TWIN_VARIANTS[0].name));
  const rows = [
    `| scenario | load | req/s: metrics + tracing / tracing off / both off | CPU ms/req: metrics + tracing / tracing off / both off | metrics cost (CPU/req) | tracing cost at 10% sampling (CPU/req) |${split ? ' tracing on, nothing sampled: CPU ms/req; every request pays / sampled traces add |' : ''}${control ? ' control ÷ Tollgate (A/A: noise) |' : ''}${twins ? ' pooled over two processes each: metrics; tracing |' : ''}`,
    `|---|---|---:|---:|---:|---:|${split ? '---|' : ''}${control ? '---:|' : ''}${twins ? '---:|' : ''}`,
  ];
  for (const r of results) {
    const { scenario, tollgate } = r;
    const tracingOff = r.variant.get(TELEMETRY_VARIANTS[0].name);
    const off = r.variant.get(TELEMETRY_VARIANTS[1].name);
    if (!tracingOff || !off) continue;
    const unsampled = r.variant.get(UNSAMPLED_VARIANT.name);
    const twin = r.variant.get(CONTROL_VARIANT.name);
    const tracingOffTwin = r.variant.get(TWIN_VARIANTS[0].name);
    const offTwin = r.variant.get(TWIN_VARIANTS[1].name);
    // Per round, the two processes of a configuration together against the two of the other.
    const pooled = (rounds: (s: Side) => number[], a: Side, a2: Side, b: Side, b2: Side) => pairedRatio(summed(rounds(a), rounds(a2)), summed(rounds(b), rounds(b2)));
    const extra = (per: (s: Side) => number, rounds: (s: Side) => number[]) =>
      (unsampled ? ` ${fmt(per(unsampled), 3)}; ${costText(pairedRatio(rounds(unsampled), rounds(tracingOff)))} / ${costText(pairedRatio(rounds(tollgate), rounds(unsampled)))} |` : '') +
      (twin ? ` ${costText(pairedRatio(rounds(twin), rounds(tollgate)))} |` : '') +
      (twin && tracingOffTwin && offTwin ? ` ${costText(pooled(rounds, tracingOff, tracingOffTwin, off, offTwin))}; ${costText(pooled(rounds, tollgate, twin, tracingOff, tracingOffTwin))} |` : '');
    rows.push(
      `| ${scenario.label} | saturated (${scenario.connections} connections) | ${fmt(mean(tollgate.rps))} / ${fmt(mean(tracingOff.rps))} / ${fmt(mean(off.rps))} | ${fmt(cpuPerRequest(tollgate), 3)} / ${fmt(cpuPerRequest(tracingOff), 3)} / ${fmt(cpuPerRequest(off), 3)} | ${costText(pairedRatio(tracingOff.cpuRounds, off.cpuRounds))} | ${costText(pairedRatio(tollgate.cpuRounds, tracingOff.cpuRounds))} |${extra(cpuPerRequest, (x) => x.cpuRounds)}`,
    );
    if (!scenario.cpuRate) continue;
    rows.push(
      `| ${scenario.label} | ${scenario.cpuRate} req/s each, all at once | — | ${fmt(fixedCpuPerRequest(tollgate), 3)} / ${fmt(fixedCpuPerRequest(tracingOff), 3)} / ${fmt(fixedCpuPerRequest(off), 3)} | ${costText(pairedRatio(tracingOff.fixedRate.rounds, off.fixedRate.rounds))} | ${costText(pairedRatio(tollgate.fixedRate.rounds, tracingOff.fixedRate.rounds))} |${extra(fixedCpuPerRequest, (x) => x.fixedRate.rounds)}`,
    );
  }
  return rows.join('\n');
}

function targetsTable(results: ScenarioResult[], keys: KeyScale | null, streams: StreamsFigure[] | null, scaleKeys: number, keyCount: number): string {
  const rows = ['| target | measured | result |', '|---|---|---|'];
  const byId = new Map(results.map((r) => [r.scenario.id, r]));
  for (const [id, what] of [['chat', 'non-stream'], ['stream20', 'stream']] as const) {
    const r = byId.get(id);
    if (!r?.floor) continue;
    const ratio = mean(r.tollgate.rps) / mean(r.floor.rps);
    rows.push(`| throughput ≥ 0.8 × floor, ${what} | ${fmt(ratio, 2)} × | ${pass(ratio >= 0.8)} |`);
  }
  for (const id of ['chat', 'stream20'] as const) {
    const r = byId.get(id);
    const tracingOff = r?.variant.get(TELEMETRY_VARIANTS[0].name);
    const off = r?.variant.get(TELEMETRY_VARIANTS[1].name);
    if (!r || !tracingOff || !off) continue;
    // Judged at saturation, whose A/A medians were the tighter (docs/benchmarks.md); the fixed-rate
    // figures are in the telemetry table. With --control, the run's own noise is shown beside them.
    const metrics = pairedRatio(tracingOff.cpuRounds, off.cpuRounds);
    const tracing = pairedRatio(r.tollgate.cpuRounds, tracingOff.cpuRounds);
    const control = r.variant.get(CONTROL_VARIANT.name);
    const noise = control ? `; A/A ${costText(pairedRatio(control.cpuRounds, r.tollgate.cpuRounds))}` : '';
    rows.push(`| metrics ≤ 3% CPU per request (${r.scenario.label}) | ${costText(metrics)}${noise} | ${pass(metrics.median - 1 <= 0.03)} |`);
    rows.push(`| tracing at 10% parent-based sampling ≤ 10% CPU per request (${r.scenario.label}) | ${costText(tracing)}${noise} | ${pass(tracing.median - 1 <= 0.1)} |`);
  }
  const chat = byId.get('chat');
  if (chat?.floor) {
    const added = percentiles(chat.tollgate.paced.latencies).p99 - percentiles(chat.floor.paced.latencies).p99;
    rows.push(`| added p99 ≤ 1 ms at ${chat.scenario.rate} req/s (chat) | ${fmt(added, 2)} ms | ${pass(added <= 1)} |`);
  }
  if (keys) {
    const { small, fallback, large, phases } = keys;
    const n = scaleKeys.toLocaleString('en');
    if (phases?.snapshotMs != null) rows.push(`| ${n}-key snapshot ≤ 2 s: \`new Snapshot()\` alone | ${fmt(phases.snapshotMs)} ms | ${pass(phases.snapshotMs <= 2000)} |`);
    if (large.side && small.side) {
      const ratio = mean(large.side.rps) / mean(small.side.rps);
      rows.push(`| ${n} keys: throughput ≥ 0.95 × 10 keys | ${fmt(ratio, 2)} × | ${pass(ratio >= 0.95)} |`);
      const snapshotMs = large.readyMs! - small.readyMs!;
      rows.push(`| ${n}-key snapshot ≤ 2 s: manifests file to ready (start-to-ready minus the 10-key start) | ${fmt(snapshotMs / 1000, 2)} s | ${pass(snapshotMs <= 2000)} |`);
      const rss = Math.max(large.side.peakRss, large.rssReady);
      rows.push(`| ${n} keys: RSS ≤ 300 MB | ${fmt(rss / MB)} MB peak (${fmt(large.rssReady / MB)} MB at ready) | ${pass(rss <= 300 * MB)} |`);
    } else {
      rows.push(`| ${n} keys: start, throughput, manifests to ready, RSS | ${large.error} | **FAIL** |`);
      if (fallback?.side && small.side) {
        const ratio = mean(fallback.side.rps) / mean(small.side.rps);
        rows.push(`| (instead) ${fallback.keys.toLocaleString('en')} keys: throughput ≥ 0.95 × 10 keys | ${fmt(ratio, 2)} × | ${pass(ratio >= 0.95)} |`);
      }
    }
  }
  for (const figure of streams ?? []) {
    // The floor's and the baseline's figures are in the scale table; the targets are the current gateway's.
    if (!figure.target.startsWith('tollgate') || figure.target.includes('@')) continue;
    const r = figure.result;
    const which = figure.target === 'tollgate' ? `${keyCount.toLocaleString('en')} keys loaded` : '10 keys loaded';
    rows.push(`| ${r.opened} concurrent streams (${which}): no dropped or merged frames | ${r.complete}/${r.opened} complete and in order, ${r.maxOpen} open at once${r.failed ? `; ${r.problems[0]}` : ''} | ${pass(r.failed === 0 && r.complete === r.opened)} |`);
    rows.push(`| ${r.opened} concurrent streams (${which}): RSS ≤ 250 MB | ${fmt(figure.peakRss / MB)} MB peak | ${pass(figure.peakRss <= 250 * MB)} |`);
  }
  return rows.join('\n');
}

function scaleTable(keys: KeyScale | null, streams: StreamsFigure[] | null): string {
  const rows = ['| figure | value |', '|---|---|'];
  if (keys) {
    for (const k of [keys.small, ...(keys.fallback ? [keys.fallback] : []), keys.large]) {
      const label = `${k.keys.toLocaleString('en')} keys`;
      if (!k.side) {
        rows.push(`| ${label} | ${k.error} |`);
        continue;
      }
      rows.push(`| ${label}: start to ready | ${fmt(k.readyMs! / 1000, 2)} s |`);
      rows.push(`| ${label}: RSS at ready / peak under chat load | ${fmt(k.rssReady / MB)} / ${fmt(k.side.peakRss / MB)} MB |`);
      rows.push(`| ${label}: chat throughput (50 conns) | ${fmt(mean(k.side.rps))} req/s, ${fmt((k.side.cpuSeconds * 1000) / k.side.requests, 3)} CPU ms/req |`);
    }
  }
  if (keys?.phases) {
    const p = keys.phases;
    const n = (v: number | null, d = 0) => fmt(v ?? NaN, d);
    rows.push(`| ${p.keys.toLocaleString('en')} keys, in-process phases (bench/snapshot-phases.ts) | ${fmt(p.megabytes, 1)} MB of YAML: parseManifests ${n(p.manifestsMs)} ms (validation ${n(p.validateMs)} ms), \`new Snapshot\` ${n(p.snapshotMs)} ms; heap +${n(p.parsePeakHeapMB)} MB after parsing, ${n(p.retainedMB)} MB retained |`);
  }
  for (const s of streams ?? []) {
    const transit = percentiles(s.result.transits);
    rows.push(`| ${s.result.opened} streams through ${s.target} (100 chunks 50 ms apart) | ${s.result.complete} complete, ${s.result.maxOpen} open at once, RSS ${fmt(s.rssBefore / MB)} → peak ${fmt(s.peakRss / MB)} MB, ${fmt(s.cpuShare * 100)}% of a core, chunk transit p50 ${fmt(transit.p50, 2)} / p99 ${fmt(transit.p99, 2)} ms |`);
  }
  return rows.join('\n');
}

function machine(): string {
  const cpu = cpus();
  let kernel = release();
  try {
    kernel = readFileSync('/proc/version', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {}
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB, ${kernel}, Node ${process.version}`;
}

// ---------------------------------------------------------------------------------------------
// --profile: Tollgate under --cpu-prof, one time window per scenario.

interface ProfileWindow {
  name: string;
  target: 'floor' | 'tollgate';
  from: number;
  to: number;
}

async function runProfile(dir: string, upstream: Service, options: Options, checkout: Baseline | null): Promise<void> {
  const profileDir = path.join(BENCH_DIR, 'results', `profile-${stamp()}`);
  const floorDir = path.join(profileDir, 'floor');
  await mkdir(floorDir, { recursive: true });
  const now = () => Number(process.hrtime.bigint() / 1000n);
  // The floor is profiled too, under the same load: what any Node.js proxy spends (sockets, HTTP
  // parsing, undici) shows there, and is not Tollgate's to remove.
  const floor = await forkService('floor', path.join(BENCH_DIR, 'floor.ts'), { BENCH_UPSTREAM_ORIGIN: upstream.origin, BENCH_UPSTREAM_KEY: SECRET, BENCH_MAX_CONNECTIONS: String(MAX_CONNECTIONS) }, ['--cpu-prof', `--cpu-prof-dir=${floorDir}`]);
  // Profiled as it is benchmarked: metrics on, tracing on (10% sampled) into a local sink.
  const sink = await forkService('otlp-sink', path.join(BENCH_DIR, 'otlp-sink.ts'), {});
  const env = { ...tracingEnv(sink), ...(options.profileTelemetry === 'on' ? {} : TELEMETRY_VARIANTS[options.profileTelemetry === 'off' ? 1 : 0].env) };
  const startUs = now();
  const main = await startBenchTollgate('tollgate-profiled', dir, upstream, options.keys, options, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`], { env });
  const { tollgate, keys } = main;
  const windows: ProfileWindow[] = [{ name: 'Tollgate start-up (manifests load)', target: 'tollgate', from: startUs, to: now() }];
  // --baseline: REF's gateway profiled in the same run, under the same load, into a folder of its own
  // (the same layout), so that profile-compare.ts compares the two like any two profile runs.
  let baseline: { process: TollgateProcess; dir: string; windows: ProfileWindow[] } | null = null;
  if (checkout) {
    const baselineDir = `${profileDir}-${checkout.short}`;
    await mkdir(baselineDir, { recursive: true });
    const { tollgate: process } = await startBenchTollgate(`tollgate@${checkout.short}`, dir, upstream, options.keys, options, ['--cpu-prof', `--cpu-prof-dir=${baselineDir}`], { root: checkout.dir, manifests: main, what: checkout.ref, env });
    baseline = { process, dir: baselineDir, windows: [] };
  }
  const durationS = options.quick ? 3 : 10;
  for (const id of options.only ?? ['chat', 'stream20']) {
    const scenario = scenarios().find((s) => s.id === id);
    if (!scenario) throw new Error(`unknown scenario ${id}`);
    const targets: Array<[string, 'floor' | 'tollgate', Target, ProfileWindow[]]> = [['tollgate', 'tollgate', tollgate, windows]];
    if (baseline) targets.push([checkout!.label, 'tollgate', baseline.process, baseline.windows]);
    if (!scenario.tollgateOnly) targets.push(['floor', 'floor', floor, windows]);
    for (const [name, kind, target, into] of targets) {
      await throughput(target, scenario, { connections: scenario.connections, durationS: 1, keys });
      const from = now();
      const r = await throughput(target, scenario, { connections: scenario.connections, durationS, keys });
      into.push({ name: `${kind === 'floor' ? 'Floor' : 'Tollgate'}, ${scenario.label}: ${r.requests} requests, ${r.rps.toFixed(0)} req/s`, target: kind, from, to: now() });
      log(`  profiled ${name} ${scenario.label}: ${r.rps.toFixed(0)} req/s`);
    }
  }
  await tollgate.stop();
  await baseline?.process.stop();
  await floor.stop();
  await sink.stop();
  await sleep(200);
  const { readdir } = await import('node:fs/promises');
  const load = async (folder: string) => {
    const file = (await readdir(folder)).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no .cpuprofile in ${folder}`);
    return { file: path.join(folder, file), profile: JSON.parse(readFileSync(path.join(folder, file), 'utf8')) as Profile };
  };
  const profiles = { tollgate: await load(profileDir), floor: await load(floorDir) };
  const report = async (folder: string, label: string, own: { file: string; profile: Profile }, list: ProfileWindow[]) => {
    const lines: string[] = [`Machine: ${machine()}. Gateway: ${label}. ${options.keys.toLocaleString('en')} keys; ${durationS} s per scenario and target.`, ''];
    const of = (w: ProfileWindow) => (w.target === 'floor' ? profiles.floor : own);
    for (const w of list) lines.push(`## ${w.name}`, '```', formatSummary(summarise(of(w).profile, { fromUs: w.from, toUs: w.to }), 25), '```', '');
    const text = lines.join('\n');
    await writeFile(path.join(folder, 'summary.md'), text);
    // The windows let a later comparison (bench/profile-compare.ts) cut two profiles the same way.
    await writeFile(path.join(folder, 'windows.json'), JSON.stringify(list.map((w) => ({ ...w, file: of(w).file }))));
    return text;
  };
  console.log(await report(profileDir, revision(), profiles.tollgate, windows));
  log(`profiles: ${profiles.tollgate.file}, ${profiles.floor.file}; summary: ${path.join(profileDir, 'summary.md')}`);
  if (baseline) {
    await report(baseline.dir, checkout!.label, await load(baseline.dir), baseline.windows);
    log(`baseline profile: ${baseline.dir}; compare: node bench/profile-compare.ts ${path.relative(ROOT, baseline.dir)} ${path.relative(ROOT, profileDir)}`);
  }
}

/** The gateway code measured: the commit, and whether the work tree differed from it. */
function revision(): string {
  try {
    const git = (args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git(['status', '--porcelain', '--', 'gateway', 'crds']) !== '';
    return `${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ' + uncommitted changes in gateway/ or crds/' : ''}`;
  } catch {
    return 'unknown';
  }
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const started = performance.now();
  if (options.pin) {
    const count = cpus().length;
    if (count < 2) throw new Error('--pin needs 2 CPUs or more');
    pinning.tollgate = String(count - 1);
    // Services forked from here on inherit this.
    pinProcess(process.pid, count === 2 ? '0' : `0-${count - 2}`);
    log(`pinned: gateways to CPU ${count - 1}, everything else to ${count === 2 ? 'CPU 0' : `CPUs 0-${count - 2}`}`);
  }
  // The baseline's copy first: a bad REF fails before anything starts.
  let checkout: Baseline | null = null;
  if (options.baseline) {
    const parent = path.join(BENCH_DIR, 'results');
    await mkdir(parent, { recursive: true });
    checkout = checkoutBaseline(ROOT, options.baseline, parent);
    log(`baseline: ${checkout.label} (${checkout.ref}: ${checkout.subject}), gateway/ and crds/ copied to ${path.relative(ROOT, checkout.dir)}`);
    for (const line of checkout.dependencyDrift) log(`  baseline runs on the current packages: ${line}`);
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-'));
  // Ctrl-C (procs.ts exits on SIGINT) skips the finally below: the manifests and logs still go.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  log(`machine: ${machine()}`);
  let upstream: Service | null = null;
  let sink: Service | null = null;
  try {
    upstream = await forkService('upstream', path.join(BENCH_DIR, 'upstream.ts'), { BENCH_UPSTREAM_KEY: SECRET });
    if (options.profile) return await runProfile(dir, upstream, options, checkout);
    const floor = await forkService('floor', path.join(BENCH_DIR, 'floor.ts'), { BENCH_UPSTREAM_ORIGIN: upstream.origin, BENCH_UPSTREAM_KEY: SECRET, BENCH_MAX_CONNECTIONS: String(MAX_CONNECTIONS) });
    sink = await forkService('otlp-sink', path.join(BENCH_DIR, 'otlp-sink.ts'), {});
    const telemetryEnv = tracingEnv(sink);
    const main = await startBenchTollgate('tollgate', dir, upstream, options.keys, options, options.nodeArgs, { env: telemetryEnv });
    const { tollgate, keys } = main;
    const variants: TollgateProcess[] = [];
    if (options.telemetryVariants) {
      for (const variant of [...TELEMETRY_VARIANTS, ...(options.tracingSplit ? [UNSAMPLED_VARIANT] : []), ...(options.control ? [CONTROL_VARIANT] : []), ...(options.twins ? TWIN_VARIANTS : [])]) {
        variants.push((await startBenchTollgate(variant.name, dir, upstream, options.keys, options, options.nodeArgs, { manifests: main, what: variant.label, env: { ...telemetryEnv, ...variant.env } })).tollgate);
      }
    }
    // The baseline: the same manifests (and keys), env, NODE_OPTIONS and --node-args; only the code differs.
    let baseline: TollgateProcess | null = null;
    if (checkout) {
      const name = `tollgate@${checkout.short}`;
      try {
        ({ tollgate: baseline } = await startBenchTollgate(name, dir, upstream, options.keys, options, options.nodeArgs, { root: checkout.dir, manifests: main, what: checkout.ref, env: telemetryEnv }));
      } catch (error) {
        // Its log goes with the temporary directory: show its end (an older gateway may not accept today's manifests).
        let tail = '';
        try {
          tail = readFileSync(path.join(dir, name, 'gateway.log'), 'utf8').trimEnd().split('\n').slice(-15).join('\n');
        } catch {}
        throw new Error(`the baseline ${checkout.label} did not start: ${(error as Error).message}${tail ? `\n--- end of its log ---\n${tail}` : ''}`);
      }
    }
    // Streams first, on fresh processes: RSS then measures the streams, not what earlier scenarios left.
    // The baseline too: a few seconds, and both gateways then start the scenarios equally warm.
    let streams: StreamsFigure[] | null = null;
    if (options.scale) {
      log(`\n▶ ${options.streams} concurrent streams`);
      streams = [await runStreams(floor, keys, options.streams), await runStreams(tollgate, keys, options.streams)];
      if (baseline) streams.push(await runStreams(baseline, keys, options.streams));
    }
    const selected = scenarios().filter((s) => !options.only || options.only.includes(s.id));
    const results: ScenarioResult[] = [];
    for (const scenario of selected) results.push(await runScenario(scenario, floor, tollgate, baseline, variants, keys, options));
    await floor.stop();
    await tollgate.stop();
    await baseline?.stop();
    for (const variant of variants) await variant.stop();
    let keyScale: KeyScale | null = null;
    if (options.scale && !options.skipKeys) keyScale = await runKeyScale(dir, upstream, options, streams);

    const minutes = (performance.now() - started) / 60_000;
    const report = [
      `Machine: ${machine()}. Gateway: ${revision()}. Run: ${options.quick ? 'quick' : 'full'}, ${options.rounds} round(s) of ${options.durationS} s per target and scenario, ${options.keys.toLocaleString('en')} keys, ${fmt(minutes, 1)} min in all.`,
      ...(checkout
        ? [
            '',
            `Baseline: ${checkout.label} = \`--baseline ${checkout.ref}\`, ${checkout.commit.slice(0, 12)} “${checkout.subject}”: its gateway/ and crds/, the current node_modules, the same manifests, env and Node.js flags, in the same rounds (A B C, then C B A).${checkout.dependencyDrift.length ? ` Dependencies declared differently at the baseline (it runs on the current ones): ${checkout.dependencyDrift.join('; ')}.` : ''}`,
          ]
        : []),
      '',
      '### Throughput at fixed concurrency (autocannon)',
      '',
      throughputTable(results, checkout?.label ?? null),
      '',
      '### Latency at a fixed moderate rate (open loop)',
      '',
      latencyTable(results, checkout?.label ?? null),
      ...(checkout
        ? ['', `### Current vs baseline (Tollgate = ${revision()}, ${checkout.label})`, '', 'ratio = req/s of Tollgate ÷ req/s of the baseline (above 1: the current gateway is faster); CPU ratio = CPU ms/req of Tollgate ÷ that of the baseline (below 1: it is cheaper).', '', baselineTable(results, checkout.label)]
        : []),
      ...(variants.length >= TELEMETRY_VARIANTS.length
        ? [
            '',
            '### Telemetry cost',
            '',
            `Tollgate runs with metrics on and tracing on (OTLP/HTTP protobuf to a local sink, parentbased_traceidratio 0.1); ${TELEMETRY_VARIANTS.map((v) => `${v.name}: ${v.label}`).join('; ')}. Same manifests, same rounds. Metrics cost = CPU/req of tracing-off ÷ telemetry-off − 1; tracing cost = CPU/req of Tollgate ÷ tracing-off − 1; each the median of the rounds' ratios (two gateways measured one after the other at saturation, or at the same time at the fixed rate), with the lowest and highest round in brackets.`,
            '',
            telemetryTable(results),
          ]
        : []),
      ...(options.scale ? ['', '### Scale', '', scaleTable(keyScale, streams)] : []),
      '',
      '### Targets',
      '',
      targetsTable(results, keyScale, streams, options.scaleKeys, options.keys),
    ].join('\n');
    console.log(`\n${report}`);
    const out = path.join(BENCH_DIR, 'results');
    await mkdir(out, { recursive: true });
    const file = path.join(out, `bench-${stamp()}${options.quick ? '-quick' : ''}${checkout ? `-vs-${checkout.short}` : ''}.md`);
    await writeFile(file, `${report}\n`);
    log(`\nwritten to ${path.relative(ROOT, file)}`);
  } finally {
    await upstream?.stop();
    await sink?.stop();
    checkout?.remove();
    if (options.keepLogs) {
      const logs = path.join(BENCH_DIR, 'results', `logs-${stamp()}`);
      await cp(dir, logs, { recursive: true, filter: (source) => !source.includes(`${path.sep}data`) && !source.endsWith('.yaml') });
      log(`gateway logs kept in ${path.relative(ROOT, logs)}`);
    }
    await rm(dir, { recursive: true, force: true });
  }
}

// --redis: what shared mode (TOLLGATE_REDIS_URL) costs per request, in its own run (bench/redis.ts).
if (process.argv.includes('--redis')) await import('./redis.ts');
else await main();
