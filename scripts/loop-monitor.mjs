// Preloaded (--import) into a gateway forked by scripts/hostile-matrix.ts: measures the gateway's own
// event-loop delay with perf_hooks.monitorEventLoopDelay and reports it, with its RSS, when asked over
// the IPC channel ('reset' starts a case, 'sample' ends it). Never loaded in production.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20);
sampler.unref();

process.on('message', (message) => {
  if (message === 'reset') {
    histogram.reset();
    peakRss = process.memoryUsage.rss();
    process.send?.({ rss: peakRss });
  } else if (message === 'sample') {
    process.send?.({ maxDelayMs: histogram.max / 1e6, p99DelayMs: histogram.percentile(99) / 1e6, peakRss, rss: process.memoryUsage.rss() });
  }
});
// The IPC channel must not keep a draining gateway alive.
process.channel?.unref();
