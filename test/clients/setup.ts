// One gateway for a client suite: a free account (service-test only) and a paying account whose
// plan reaches the fake upstream as `fake-chat`, both with keys; plus the small fixtures the
// suites share (a two-page PDF, a short WAV).
import { PNG } from 'pngjs';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

export interface ClientWorld {
  gw: TestGateway;
  fake: FakeUpstream;
  /** Key of the free account: service-test only. */
  freeKey: string;
  /** Key of the paying account: service-test and `fake-chat` (the fake upstream's `upstream-model`). */
  paidKey: string;
  baseURL: string;
  stop(): Promise<void>;
}

export async function startClientWorld(overrides: Parameters<typeof startTestGateway>[1] = {}, extraManifests: unknown[] = []): Promise<ClientWorld> {
  const fake = await startFakeUpstream('fake');
  process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
  const free = newKey('free-key', 'free-app');
  const paid = newKey('paid-key', 'paid-app');
  const gw = await startTestGateway(
    [
      upstream('fake', fake.url),
      model('fake-chat', [{ upstream: 'fake', model: 'upstream-model' }]),
      plan('pro', ['fake-chat']),
      account('free-app'),
      account('paid-app', 'pro'),
      apiKey(free),
      apiKey(paid),
      ...extraManifests,
    ],
    overrides,
  );
  return {
    gw,
    fake,
    freeKey: free.key,
    paidKey: paid.key,
    baseURL: `${gw.url}/v1`,
    async stop() {
      await gw.stop();
      await fake.close();
    },
  };
}

/** A minimal, well-formed two-page PDF. */
export function twoPagePdf(): Buffer {
  return Buffer.from(
    '%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [3 0 R 4 0 R] /Count 2>> endobj\n' +
      '3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]>> endobj\n4 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]>> endobj\n' +
      'trailer <</Root 1 0 R>>\n%%EOF\n',
    'latin1',
  );
}

export function png(width: number, height: number): Buffer {
  const image = new PNG({ width, height });
  image.data.fill(180);
  return PNG.sync.write(image);
}

/** Half a second of silence as 16-bit mono 16 kHz PCM WAV. */
export function shortWav(): Buffer {
  const samples = 8000;
  const data = Buffer.alloc(samples * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(16000, 24);
  header.writeUInt32LE(32000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}
