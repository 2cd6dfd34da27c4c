import { Registry, type RegistryContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundCounter, BoundHistogram } from './bound-metrics.ts';

function registry(): Registry<RegistryContentType> {
  const registry = new Registry<RegistryContentType>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  return registry;
}

describe('bound series', () => {
  it('keep one series per label set, whatever characters the values hold', async () => {
    const reg = registry();
    const counter = new BoundCounter({ name: 'c', help: 'h', labelNames: ['a', 'b'], registers: [reg] });
    // Values a joined key would confuse (the separator inside a value) stay apart.
    counter.inc(['x\u0001y', 'z']);
    counter.inc(['x', 'y\u0001z'], 2);
    counter.inc(['x', 'y\u0001z']);
    // The same values as other string objects find the same series.
    counter.inc([['x'].join(''), `y\u0001${'z'}`]);
    const values = (await counter.get()).values;
    expect(values).toEqual([
      { labels: { a: 'x\u0001y', b: 'z' }, value: 1 },
      { labels: { a: 'x', b: 'y\u0001z' }, value: 4 },
    ]);
  });

  it('refuses a label set of the wrong length, and starts empty again after reset', async () => {
    const counter = new BoundCounter({ name: 'c', help: 'h', labelNames: ['a', 'b'], registers: [registry()] });
    counter.inc(['x', 'y']);
    expect(() => counter.inc(['x'])).toThrow(/1 label values for 2 labels/);
    expect(() => counter.inc(['x', 'y', 'z'])).toThrow(/3 label values for 2 labels/);
    counter.reset();
    expect((await counter.get()).values).toEqual([]);
    counter.inc(['x', 'y'], 5);
    expect((await counter.get()).values).toEqual([{ labels: { a: 'x', b: 'y' }, value: 5 }]);
  });

  it('render histograms as prom-client does, each bucket with the latest exemplar it got', async () => {
    const reg = registry();
    const histogram = new BoundHistogram({ name: 'd_seconds', help: 'h', labelNames: ['op'], buckets: [0.1, 1], registers: [reg], exemplars: true });
    histogram.observe(['chat'], 0.05, 'req-1', null);
    histogram.observe(['chat'], 0.07, 'req-2', '0af7651916cd43dd8448eb211c80319c');
    histogram.observe(['chat'], 5, 'req-3', null);
    histogram.observe(['embeddings'], 0.5);
    const text = await reg.metrics();
    expect(text).toContain('d_seconds_bucket{le="0.1",op="chat"} 2 # {trace_id="0af7651916cd43dd8448eb211c80319c",request_id="req-2"} 0.07');
    expect(text).toContain('d_seconds_bucket{le="1",op="chat"} 2\n');
    expect(text).toContain('d_seconds_bucket{le="+Inf",op="chat"} 3 # {request_id="req-3"} 5');
    expect(text).toContain('d_seconds_sum{op="chat"} 5.12');
    expect(text).toContain('d_seconds_count{op="chat"} 3');
    expect(text).toContain('d_seconds_bucket{le="1",op="embeddings"} 1\n');
    // A value that is not a number is not recorded.
    histogram.observe(['chat'], Number.NaN, 'req-4');
    expect(await reg.metrics()).toContain('d_seconds_count{op="chat"} 3');
  });
});
