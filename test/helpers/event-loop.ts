// How long a test's in-process gateway held its event loop: the measure behind "no request blocks
// the event loop for more than a few tens of milliseconds" (issue 11).
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * The longest the event loop was held while `work` ran (this process hosts the gateway). Timer
 * lateness alone (monitorEventLoopDelay) also counts the time the process waited for a core, which
 * on a loaded machine is most of it; so each gap between two timer turns is charged the CPU time
 * this thread burned in it (not the process's: worker threads run beside the loop without holding
 * it), and the longest such gap is the stall.
 */
export async function maxStallMs(work: () => Promise<unknown>): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let longest = 0;
  let last = process.threadCpuUsage();
  let running = true;
  const tick = () => {
    const now = process.threadCpuUsage();
    const burned = (now.user - last.user + now.system - last.system) / 1000;
    longest = Math.max(longest, burned);
    last = now;
    if (running) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  try {
    await work();
  } finally {
    running = false;
    histogram.disable();
  }
  // Wall-clock delay is the stricter measure, and the right one when the machine is idle.
  return Math.min(longest, histogram.max / 1e6);
}
