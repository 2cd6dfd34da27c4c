// Image URLs for providers that take only bytes (Gemini, Vertex AI, Bedrock): OpenAI's own vision
// example, sent unmodified by the openai SDK, works because the gateway fetches the image and sends
// its bytes. The images come from a local server on 127.0.0.1, which this gateway is allowed to reach
// (TOLLGATE_FETCH_IMAGE_PRIVATE_HOSTS); the fakes receive exactly the server's bytes. The guards are
// proven by what they refuse, each a 400 naming the part: a redirect to another loopback address (a
// server there would answer, and is never asked), a page or a file lying about its type, an image past
// the cap (cut off while it streams), images past the request's total, a server that never answers,
// one that is not there, too many redirects. The default policy refuses loopback outright, by address
// and by name, and `off` keeps the providers' own 400.
import { generateKeyPairSync } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { account, API, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { closedPort, startImageServer, type ImageServer } from '../helpers/image-server.ts';
import { waitFor } from '../helpers/wait.ts';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const serviceAccount = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'images@proj-1.iam.gserviceaccount.com';
process.env.REMOTE_IMAGES_BEDROCK_KEY_ID = FAKE_ACCESS_KEY;
process.env.REMOTE_IMAGES_BEDROCK_SECRET = FAKE_SECRET_KEY;
const key = newKey('k', 'viewer');
const defaults = loadConfig({}).remoteImages;
/** Short enough for the never-answering server, long enough for a loaded machine's local fetch. */
const TIMEOUT_MS = 2_000;
const MAX_IMAGE = 64 * 1024;
const MAX_REQUEST = 90 * 1024;

let gemini: FakeGemini;
/** Claude's semantics behind the fake Vertex's Claude endpoints. */
let claudeOnVertex: FakeAnthropic;
let bedrock: FakeBedrock;
let images: ImageServer;
/** On another loopback address, which the gateway is not allowed to reach: it must never be asked. */
let internal: ImageServer;

function manifests() {
  return [
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'REMOTE_IMAGES_GEMINI_KEY' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'vertex' }, spec: { provider: 'vertex', baseURL: gemini.url, vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { env: 'REMOTE_IMAGES_VERTEX_SA' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'bedrock' }, spec: { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'REMOTE_IMAGES_BEDROCK_KEY_ID' }, secretAccessKey: { env: 'REMOTE_IMAGES_BEDROCK_SECRET' } } } },
    model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
    model('claude', [{ upstream: 'bedrock', model: CLAUDE }]),
    model('vertex-pro', [{ upstream: 'vertex', model: 'gemini-2.5-pro' }]),
    model('vertex-claude', [{ upstream: 'vertex', model: 'claude-sonnet-4-5@20250929' }]),
    model('flash-then-claude', [{ upstream: 'gemini', model: 'gemini-2.5-flash', priority: 0 }, { upstream: 'bedrock', model: CLAUDE, priority: 1 }]),
    plan('vision', ['flash', 'claude', 'vertex-pro', 'vertex-claude', 'flash-then-claude'], { tokensPerMinute: 10_000_000 }),
    account('viewer', 'vision'),
    apiKey(key),
  ];
}

const ask = (url: string, text = 'What is in this image?') => [{ role: 'user' as const, content: [{ type: 'text' as const, text }, { type: 'image_url' as const, image_url: { url } }] }];

/** The inlineData parts of the fake Gemini's last request. */
function geminiImages(): unknown[] {
  const body = gemini.requests.at(-1)!.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> };
  return body.contents.flatMap((content) => content.parts.filter((part) => part.inlineData));
}

/** The image blocks of the fake Bedrock's last request. */
function bedrockImages(): unknown[] {
  const body = bedrock.requests.at(-1)!.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
  return body.messages.flatMap((message) => message.content.filter((block) => block.image));
}

beforeAll(async () => {
  claudeOnVertex = await startFakeAnthropic();
  gemini = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: serviceAccount.publicKey }, claude: claudeOnVertex });
  bedrock = await startFakeBedrock();
  process.env.REMOTE_IMAGES_GEMINI_KEY = gemini.apiKey;
  process.env.REMOTE_IMAGES_VERTEX_SA = JSON.stringify({
    type: 'service_account', project_id: 'proj-1', private_key_id: 'kid-1', client_email: EMAIL, token_uri: gemini.tokenUri,
    private_key: serviceAccount.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  });
  internal = await startImageServer('127.0.0.2');
  images = await startImageServer('127.0.0.1', `${internal.origin}/red.png`);
});
afterAll(async () => {
  await images?.close();
  await internal?.close();
  await gemini?.close();
  await claudeOnVertex?.close();
  await bedrock?.close();
});

describe('image URLs fetched for Gemini and Bedrock (loopback allowed by the operator)', () => {
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    gw = await startTestGateway(manifests(), { remoteImages: { ...defaults, privateHosts: ['127.0.0.1'], timeoutMs: TIMEOUT_MS, maxImageBytes: MAX_IMAGE, maxRequestBytes: MAX_REQUEST } });
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
  });
  beforeEach(() => {
    gemini.requests.length = 0;
    bedrock.requests.length = 0;
    images.hits.length = 0;
  });

  it("OpenAI's vision request reaches Gemini as inlineData with the server's exact bytes, JSON and streamed", async () => {
    const red = images.images['/red.png'];
    const answer = await client.chat.completions.create({ model: 'flash', messages: ask(`${images.origin}/red.png`) });
    expect(answer.choices[0].message.content).toBe(`You said: What is in this image? [image/png, ${red.length} bytes]`);
    expect(geminiImages()).toEqual([{ inlineData: { mimeType: 'image/png', data: red.toString('base64') } }]);

    const jpeg = images.images['/photo.jpg'];
    const stream = await client.chat.completions.create({ model: 'flash', stream: true, messages: ask(`${images.origin}/photo.jpg`, 'And this?') });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe(`You said: And this? [image/jpeg, ${jpeg.length} bytes]`);
    expect(geminiImages()).toEqual([{ inlineData: { mimeType: 'image/jpeg', data: jpeg.toString('base64') } }]);
    // The access line is written when the response has closed, which may follow the client's last read.
    const fetchedJpeg = (entry: Record<string, unknown>) => (entry.imageFetch as { bytes?: number } | undefined)?.bytes === jpeg.length;
    await waitFor(() => gw.logs.some(fetchedJpeg), 10_000, "the streamed request's access line");
    expect(gw.logs.find(fetchedJpeg)!.imageFetch).toEqual({ images: 1, bytes: jpeg.length, ms: expect.any(Number) });
  });

  it('reaches Vertex AI as inlineData too', async () => {
    const blue = images.images['/blue.png'];
    const answer = await client.chat.completions.create({ model: 'vertex-pro', messages: ask(`${images.origin}/blue.png`, 'Colour?') });
    expect(answer.choices[0].message.content).toBe(`You said: Colour? [image/png, ${blue.length} bytes]`);
    expect(gemini.requests.at(-1)!.path).toContain('/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent');
    expect(geminiImages()).toEqual([{ inlineData: { mimeType: 'image/png', data: blue.toString('base64') } }]);
  });

  it('reaches Bedrock as image blocks, a URL named twice fetched once, a redirect on the same server followed', async () => {
    const red = images.images['/red.png'];
    const blue = images.images['/blue.png'];
    const answer = await client.chat.completions.create({
      model: 'claude',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare' },
            { type: 'image_url', image_url: { url: `${images.origin}/redirect-ok`, detail: 'low' } },
            { type: 'image_url', image_url: { url: `${images.origin}/blue.png` } },
            { type: 'image_url', image_url: { url: `${images.origin}/blue.png` } },
          ],
        },
      ],
    });
    expect(answer.choices[0].message.content).toBe(`You said: Compare [images: png ${red.length} bytes, png ${blue.length} bytes, png ${blue.length} bytes]`);
    expect(bedrockImages()).toEqual([
      { image: { format: 'png', source: { bytes: red.toString('base64') } } },
      { image: { format: 'png', source: { bytes: blue.toString('base64') } } },
      { image: { format: 'png', source: { bytes: blue.toString('base64') } } },
    ]);
    expect(images.hits.filter((path) => path === '/blue.png')).toHaveLength(1);
    expect(images.hits).toContain('/redirect-ok');
  });

  it('is fetched once per request across fallback: Gemini overloaded, Bedrock answers with the same bytes', async () => {
    gemini.script({ error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded.' } });
    const red = images.images['/red.png'];
    const answer = await client.chat.completions.create({ model: 'flash-then-claude', messages: ask(`${images.origin}/red.png`, 'Again') });
    expect(answer.choices[0].message.content).toBe(`You said: Again [images: png ${red.length} bytes]`);
    expect(gemini.requests).toHaveLength(1);
    expect(geminiImages()).toEqual([{ inlineData: { mimeType: 'image/png', data: red.toString('base64') } }]);
    expect(bedrockImages()).toEqual([{ image: { format: 'png', source: { bytes: red.toString('base64') } } }]);
    expect(images.hits).toEqual(['/red.png']);
  });

  it("Responses' input_image and Messages' url image source reach the provider as the fetched bytes", async () => {
    const red = images.images['/red.png'];
    const response = await client.responses.create({ model: 'flash', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Describe' }, { type: 'input_image', image_url: `${images.origin}/red.png`, detail: 'auto' }] }] });
    expect(response.output_text).toBe(`You said: Describe [image/png, ${red.length} bytes]`);
    expect(geminiImages()).toEqual([{ inlineData: { mimeType: 'image/png', data: red.toString('base64') } }]);

    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${images.origin}/red.png` } }, { type: 'text', text: 'Describe' }] }] });
    expect(message.content).toEqual([{ type: 'text', text: `You said: Describe [images: png ${red.length} bytes]` }]);
    expect(bedrockImages()).toEqual([{ image: { format: 'png', source: { bytes: red.toString('base64') } } }]);
  });

  it("Claude on Vertex AI takes no URL: the Messages API with a url image source is translated there, and Vertex gets the bytes", async () => {
    const red = images.images['/red.png'];
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'vertex-claude', max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${images.origin}/red.png` } }, { type: 'text', text: 'Describe' }] }] });
    expect(message.content[0]).toMatchObject({ type: 'text' });
    const sent = gemini.requests.filter((r) => r.path.includes('/publishers/anthropic/')).at(-1)!.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
    expect(sent.messages[0].content.filter((block) => block.type === 'image')).toEqual([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: red.toString('base64') } }]);
    expect(images.hits).toEqual(['/red.png']);
  });

  /** The 400 the SDK raised for `url`, and that nothing reached either provider. */
  async function refused(url: string, modelName = 'flash'): Promise<{ message: string; code: string; param: string; type: string }> {
    const error = await client.chat.completions.create({ model: modelName, messages: ask(url) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(gemini.requests).toHaveLength(0);
    expect(bedrock.requests).toHaveLength(0);
    return (error as InstanceType<typeof OpenAI.BadRequestError>).error as { message: string; code: string; param: string; type: string };
  }

  it('a redirect to another loopback address is refused, and that server is never asked', async () => {
    const error = await refused(`${images.origin}/redirect-away`, 'claude');
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_image_url', param: 'messages[0].content[1].image_url.url' });
    expect(error.message).toBe(`Error while downloading ${images.origin}/redirect-away: a redirect led to an address the gateway does not fetch from (loopback, private, link-local or otherwise not public).`);
    expect(error.message).not.toContain('127.0.0.2');
    expect(internal.hits).toEqual([]);
  });

  it('a page, and a file whose bytes are not the image its type claims, are refused as not images', async () => {
    const page = await refused(`${images.origin}/page.html`);
    expect(page).toMatchObject({ code: 'invalid_image_format', param: 'messages[0].content[1].image_url.url' });
    expect(page.message).toContain('text/html');
    const lies = await refused(`${images.origin}/lies.png`, 'claude');
    expect(lies).toMatchObject({ code: 'invalid_image_format', message: `Error while downloading ${images.origin}/lies.png: its bytes are not a png, jpeg, gif or webp image.` });
  });

  it('an image past the cap is cut off as it streams; images past the request total are refused', async () => {
    const endless = await refused(`${images.origin}/endless.png`);
    expect(endless).toMatchObject({ code: 'invalid_image_url', message: `Error while downloading ${images.origin}/endless.png: the image is larger than 0.1 MB.` });
    await waitFor(() => images.cut.includes('/endless.png'), 10_000, 'the endless image to be cut off');

    expect(images.images['/noise-a.png'].length).toBeLessThan(MAX_IMAGE);
    expect(images.images['/noise-a.png'].length + images.images['/noise-b.png'].length).toBeGreaterThan(MAX_REQUEST);
    const error = await client.chat.completions
      .create({ model: 'claude', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `${images.origin}/noise-a.png` } }, { type: 'image_url', image_url: { url: `${images.origin}/noise-b.png` } }] }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    // Both are fetched at once: the one whose bytes cross the total is named.
    const total = (error as { error: { message: string; param: string; code: string } }).error;
    expect(total.code).toBe('invalid_image_url');
    const named = /^Error while downloading (\S+): the images named by URL in this request add up to more than 0\.1 MB\.$/.exec(total.message)?.[1];
    expect([`${images.origin}/noise-a.png`, `${images.origin}/noise-b.png`]).toContain(named);
    expect(total.param).toBe(`messages[0].content[${named!.endsWith('noise-a.png') ? 0 : 1}].image_url.url`);
    expect(bedrock.requests).toHaveLength(0);
  });

  it('more image URLs than the count cap are refused before anything is fetched', async () => {
    const parts = Array.from({ length: defaults.maxImages + 1 }, () => ({ type: 'image_url' as const, image_url: { url: `${images.origin}/red.png` } }));
    const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: parts }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as { error: unknown }).error).toMatchObject({ code: 'too_many_images', param: `messages[0].content[${defaults.maxImages}].image_url.url` });
    expect(images.hits).toEqual([]);
    expect(bedrock.requests).toHaveLength(0);
  });

  it('a server that never answers times out; one that is not there, a 404 and a redirect loop are refused', async () => {
    const hang = await refused(`${images.origin}/hang.png`);
    expect(hang).toMatchObject({ code: 'invalid_image_url', message: `Timeout while downloading ${images.origin}/hang.png.`, param: 'messages[0].content[1].image_url.url' });
    expect(images.hanging).toContain('/hang.png');

    const port = await closedPort();
    const gone = await refused(`http://127.0.0.1:${port}/red.png`, 'claude');
    expect(gone).toMatchObject({ code: 'invalid_image_url', message: `Error while downloading http://127.0.0.1:${port}/red.png: the server could not be reached or broke off the transfer.` });

    expect((await refused(`${images.origin}/missing.png`)).message).toBe(`Error while downloading ${images.origin}/missing.png: the server answered 404.`);
    expect((await refused(`${images.origin}/redirect-loop`)).message).toBe(`Error while downloading ${images.origin}/redirect-loop: more than 3 redirects.`);
    expect(images.hits.filter((path) => path === '/redirect-loop')).toHaveLength(4);
  });
});

describe('a client that leaves while its image is being fetched', () => {
  let patient: TestGateway;

  beforeAll(async () => {
    // A clock far longer than the wait below: only the client's departure can stop the fetch in time.
    patient = await startTestGateway(manifests(), { remoteImages: { ...defaults, privateHosts: ['127.0.0.1'], timeoutMs: 120_000 } });
  });
  afterAll(async () => {
    await patient?.stop();
  });

  it('stops the fetch, and sends nothing to the provider', async () => {
    gemini.requests.length = 0;
    images.cut.length = 0;
    images.hanging.length = 0;
    const leave = new AbortController();
    const pending = patient.client(key.key).chat.completions.create({ model: 'flash', messages: ask(`${images.origin}/hang.png`) }, { signal: leave.signal }).catch((e: unknown) => e);
    await waitFor(() => images.hanging.includes('/hang.png'), 10_000, 'the image request to arrive');
    leave.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    await waitFor(() => images.cut.includes('/hang.png'), 10_000, 'the gateway to let the image request go');
    await waitFor(() => patient.logs.some((entry) => entry.route === '/v1/chat/completions' && entry.abortReason === 'client_gone'), 10_000, 'the access line');
    expect(gemini.requests).toHaveLength(0);
  });
});

describe('image URLs under the default policy, and switched off', () => {
  let strict: TestGateway;
  let off: TestGateway;

  beforeAll(async () => {
    strict = await startTestGateway(manifests(), { remoteImages: { ...defaults, timeoutMs: TIMEOUT_MS } });
    off = await startTestGateway(manifests(), { remoteImages: { ...defaults, enabled: false } });
  });
  afterAll(async () => {
    await strict?.stop();
    await off?.stop();
  });
  beforeEach(() => {
    gemini.requests.length = 0;
    bedrock.requests.length = 0;
    images.hits.length = 0;
  });

  it('loopback is refused by address and by name (localhost), and the image server is never asked', async () => {
    const client = strict.client(key.key);
    for (const url of [`${images.origin}/red.png`, `http://localhost:${images.port}/red.png`, `http://[::1]:${images.port}/red.png`, 'http://169.254.169.254/latest/meta-data/', 'http://0.0.0.0/x.png']) {
      const error = await client.chat.completions.create({ model: 'flash', messages: ask(url) }).catch((e: unknown) => e);
      expect(error, url).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as { error: unknown }).error, url).toMatchObject({
        code: 'invalid_image_url',
        param: 'messages[0].content[1].image_url.url',
        message: `Error while downloading ${url}: the host is not on a public address (loopback, private, link-local and the like are not fetched).`,
      });
    }
    expect(images.hits).toEqual([]);
    expect(gemini.requests).toHaveLength(0);
  });

  it('off: the provider refuses an http(s) URL as before, naming the part; nothing is fetched', async () => {
    const client = off.client(key.key);
    const onGemini = await client.chat.completions.create({ model: 'flash', messages: ask(`${images.origin}/red.png`) }).catch((e: unknown) => e);
    expect((onGemini as { error: unknown }).error).toMatchObject({ code: 'unsupported_parameter', param: 'messages[0].content[1].image_url' });
    const onBedrock = await client.chat.completions.create({ model: 'claude', messages: ask(`${images.origin}/red.png`) }).catch((e: unknown) => e);
    expect((onBedrock as { error: unknown }).error).toMatchObject({ code: 'unsupported_parameter', param: 'messages[0].content[1].image_url.url' });
    expect(images.hits).toEqual([]);
  });
});
