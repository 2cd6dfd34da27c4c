// The fake Gemini API / Vertex AI is proven faithful by Google's own SDK (@google/genai): pointed at
// the fake with `httpOptions.baseUrl`, it sends its real requests and parses the fake's answers —
// JSON, the SSE stream, function calling, embeddings, token counts, the model list — and raises the
// fake's errors as its own ApiError. In Vertex mode the SDK's auth library can only mint tokens at
// Google's own token URL, so it is given an auth client holding a token the fake's OAuth endpoint
// issued (the JWT-bearer grant itself is exercised by the gateway's auth tests against the fake).
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { ApiError, GoogleGenAI, Type, type FunctionDeclaration } from '@google/genai';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'tollgate-test@project.iam.gserviceaccount.com';
let fake: FakeGemini;
let ai: GoogleGenAI;

const weather: FunctionDeclaration = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
};

async function fakeToken(): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ scope: 'https://www.googleapis.com/auth/cloud-platform' })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuer(EMAIL)
    .setSubject(EMAIL)
    .setAudience(fake.tokenUri)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(keys.privateKey);
  const response = await fetch(fake.tokenUri, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }) });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

function vertexClient(token: string): GoogleGenAI {
  // GoogleAuth takes a ready auth client (`authClient`); this one answers the fake's token.
  const authClient = { getRequestHeaders: async () => new Headers({ authorization: `Bearer ${token}` }) };
  return new GoogleGenAI({ vertexai: true, project: 'proj-1', location: 'us-central1', apiVersion: 'v1', httpOptions: { baseUrl: fake.url }, googleAuthOptions: { authClient: authClient as never } });
}

beforeAll(async () => {
  fake = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey } });
  ai = new GoogleGenAI({ apiKey: fake.apiKey, httpOptions: { baseUrl: fake.url } });
});
afterAll(() => fake.close());

describe('fake Gemini API, driven by @google/genai', () => {
  it('answers generateContent from the request, with usage', async () => {
    const response = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello there', config: { systemInstruction: 'Be brief.' } });
    expect(response.text).toBe('You said: hello there');
    expect(response.candidates?.[0].finishReason).toBe('STOP');
    const usage = response.usageMetadata!;
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
    expect(fake.requests.at(-1)!.headers['x-goog-api-key']).toBe(fake.apiKey);
    expect(fake.requests.at(-1)!.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
  });

  it('streams with alt=sse: text in pieces, then the finish reason alone', async () => {
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'one two three four five six seven' });
    const texts: string[] = [];
    let finish: string | undefined;
    for await (const chunk of stream) {
      if (chunk.text) texts.push(chunk.text);
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    expect(texts.length).toBeGreaterThan(2);
    expect(texts.join('')).toBe('You said: one two three four five six seven');
    expect(finish).toBe('STOP');
    expect(fake.requests.at(-1)!.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });

  it('calls a named function and takes its result back', async () => {
    const first = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'use get_weather please', config: { tools: [{ functionDeclarations: [weather] }] } });
    const call = first.functionCalls![0];
    expect(call).toMatchObject({ name: 'get_weather', args: { city: 'city-value' } });
    const second = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [
        { role: 'user', parts: [{ text: 'use get_weather please' }] },
        { role: 'model', parts: [{ functionCall: call }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temperature: 21 } } }] },
      ],
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    expect(second.text).toBe('Tool results: get_weather={"temperature":21}');
  });

  it('refuses a function-response turn that does not match the calls, as Google does', async () => {
    const error = await ai.models
      .generateContent({
        model: 'gemini-2.5-flash',
        contents: [
          { role: 'user', parts: [{ text: 'parallel please' }] },
          { role: 'model', parts: [{ functionCall: { name: 'a', args: {} } }, { functionCall: { name: 'b', args: {} } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'a', response: {} } }] },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).message).toContain('number of function response parts is equal to the number of function call parts');
  });

  it('signs Gemini 3 function calls and refuses a replay without the signature', async () => {
    const first = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: 'get_weather now', config: { tools: [{ functionDeclarations: [weather] }] } });
    const part = first.candidates![0].content!.parts!.find((p) => p.functionCall)!;
    expect(part.thoughtSignature).toBeTruthy();
    const history = (signature?: string) => [
      { role: 'user', parts: [{ text: 'get_weather now' }] },
      { role: 'model', parts: [{ functionCall: part.functionCall, ...(signature ? { thoughtSignature: signature } : {}) }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { ok: true } } }] },
    ];
    const replay = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: history(part.thoughtSignature), config: { tools: [{ functionDeclarations: [weather] }] } });
    expect(replay.text).toContain('Tool results');
    const refused = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: history(), config: { tools: [{ functionDeclarations: [weather] }] } }).catch((e: unknown) => e);
    expect((refused as ApiError).status).toBe(400);
    expect((refused as ApiError).message).toContain('missing a thought_signature');
  });

  it('fills a response schema', async () => {
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'a person',
      config: { responseMimeType: 'application/json', responseJsonSchema: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } } } },
    });
    expect(JSON.parse(response.text!)).toEqual({ name: 'name-value', age: 42 });
  });

  it('embeds a batch in order, with outputDimensionality', async () => {
    const response = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['alpha', 'beta'], config: { outputDimensionality: 4 } });
    expect(response.embeddings).toHaveLength(2);
    expect(response.embeddings![0].values).toHaveLength(4);
    expect(response.embeddings![0].values).not.toEqual(response.embeddings![1].values);
    expect(fake.requests.at(-1)!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
  });

  it('counts tokens and lists models', async () => {
    const count = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'count these words' });
    expect(count.totalTokens).toBeGreaterThan(0);
    const pager = await ai.models.list({ config: { pageSize: 1 } });
    expect(pager.page.map((m) => m.name)).toEqual(['models/gemini-2.5-flash']);
  });

  it('raises a scripted 429 with RetryInfo, an array-wrapped 503 and a bad key as ApiError', async () => {
    fake.script({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded.', retryDelay: '7s' } });
    const limited = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(ApiError);
    expect((limited as ApiError).status).toBe(429);
    expect((limited as ApiError).message).toContain('RetryInfo');

    fake.script({ error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded.', arrayWrapped: true } });
    const overloaded = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }).catch((e: unknown) => e);
    expect((overloaded as ApiError).status).toBe(503);

    const bad = new GoogleGenAI({ apiKey: 'AIza-wrong', httpOptions: { baseUrl: fake.url } });
    const refused = await bad.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }).catch((e: unknown) => e);
    expect((refused as ApiError).status).toBe(400);
    expect((refused as ApiError).message).toContain('API_KEY_INVALID');
  });

  it('raises an error sent inside the stream', async () => {
    fake.script({ errorAfterChunks: 2 });
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'one two three four five six seven eight' });
    const error = await (async () => {
      for await (const _chunk of stream) {
        // read until the error
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).toContain('overloaded');
  });
});

describe('fake Vertex AI, driven by @google/genai in Vertex mode', () => {
  it('answers the Vertex paths with a token from the fake OAuth endpoint, and refuses an expired one', async () => {
    const client = vertexClient(await fakeToken());
    const response = await client.models.generateContent({ model: 'gemini-2.5-pro', contents: 'hi vertex' });
    expect(response.text).toBe('You said: hi vertex');
    expect(fake.requests.at(-1)!.path).toBe('/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent');
    expect(fake.requests.at(-1)!.body.contents[0].role).toBe('user');

    const stream = await client.models.generateContentStream({ model: 'gemini-2.5-pro', contents: 'stream on vertex' });
    let text = '';
    for await (const chunk of stream) text += chunk.text ?? '';
    expect(text).toBe('You said: stream on vertex');

    const embedded = await client.models.embedContent({ model: 'text-embedding-005', contents: ['one', 'two'] });
    expect(embedded.embeddings).toHaveLength(2);
    expect(fake.requests.at(-1)!.path).toMatch(/text-embedding-005:predict$/);

    fake.expireTokens();
    const expired = await client.models.generateContent({ model: 'gemini-2.5-pro', contents: 'x' }).catch((e: unknown) => e);
    expect((expired as ApiError).status).toBe(401);
    expect((expired as ApiError).message).toContain('ACCESS_TOKEN_EXPIRED');
  });

  it('refuses an assertion signed by another key, and an id on a Vertex function call', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const now = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ scope: 'https://www.googleapis.com/auth/cloud-platform' }).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).setIssuer(EMAIL).setSubject(EMAIL).setAudience(fake.tokenUri).setIssuedAt(now).setExpirationTime(now + 3600).sign(other.privateKey);
    const response = await fetch(fake.tokenUri, { method: 'POST', body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: forged }) });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });

    const client = vertexClient(await fakeToken());
    const error = await client.models
      .generateContent({
        model: 'gemini-2.5-pro',
        contents: [
          { role: 'user', parts: [{ text: 'q' }] },
          { role: 'model', parts: [{ functionCall: { id: 'c1', name: 'f', args: {} } }] },
          { role: 'user', parts: [{ functionResponse: { id: 'c1', name: 'f', response: {} } }] },
        ],
      })
      .catch((e: unknown) => e);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).message).toContain('Unknown name \\"id\\"');
  });
});

describe('fake Gemini checks requests as strictly as Google', () => {
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${fake.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': fake.apiKey, ...headers }, body: JSON.stringify(body) });
    return { status: response.status, text: await response.text() };
  };
  const generate = (body: unknown) => post('/v1beta/models/gemini-2.0-flash:generateContent', body);
  const user = { role: 'user', parts: [{ text: 'hi' }] };

  it.each([
    ['no contents', { contents: [] }, 'contents is not specified'],
    ['empty parts', { contents: [{ role: 'user', parts: [] }] }, 'contents.parts must not be empty'],
    ['a part with two data fields', { contents: [{ role: 'user', parts: [{ text: 'a', inlineData: { mimeType: 'image/png', data: '' } }] }] }, "required oneof field 'data'"],
    ['an empty text part', { contents: [{ role: 'user', parts: [{ text: '' }] }] }, "required oneof field 'data'"],
    ['a bad role', { contents: [{ role: 'assistant', parts: [{ text: 'a' }] }] }, 'Please use a valid role: user, model.'],
    ['two user turns in a row', { contents: [user, user] }, 'alternate between user and model'],
    ['an unknown top-level field', { contents: [user], messages: [] }, 'Unknown name "messages"'],
    ['an unknown generation field', { contents: [user], generationConfig: { max_tokens: 5 } }, 'Unknown name "max_tokens" at \'generation_config\''],
    ['additionalProperties in parameters', { contents: [user], tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: 'object', additionalProperties: false } }] }] }, 'Unknown name "additionalProperties"'],
    ['$ref in parameters', { contents: [user], tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: 'object', properties: { a: { $ref: '#/$defs/a' } } } }] }] }, 'Unknown name "$ref"'],
    ['a type list in parameters', { contents: [user], tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: ['string', 'null'] } }] }] }, "Invalid value at 'tools[0].function_declarations[0].parameters.type'"],
    ['a function name starting with a digit', { contents: [user], tools: [{ functionDeclarations: [{ name: '1f' }] }] }, 'Invalid function name'],
    ['allowedFunctionNames without ANY', { contents: [user], toolConfig: { functionCallingConfig: { mode: 'AUTO', allowedFunctionNames: ['f'] } } }, 'only allowed when function calling mode is ANY'],
    ['cachedContent with a system instruction', { contents: [user], cachedContent: 'cachedContents/x', systemInstruction: { parts: [{ text: 's' }] } }, 'CachedContent can not be used'],
    ['a function response without a name', { contents: [user, { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] }, { role: 'user', parts: [{ functionResponse: { name: '', response: {} } }] }] }, 'Name cannot be empty'],
    ['gs:// without a mime type', { contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'gs://b/o' } }] }] }, 'a mime type is required'],
    ['thinkingLevel on a 2.x model', { contents: [user], generationConfig: { thinkingConfig: { thinkingLevel: 'LOW' } } }, 'Thinking level is not supported'],
  ])('refuses %s', async (_what, body, message) => {
    const answer = await generate(body);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(answer.text).toContain(JSON.stringify(message).slice(1, -1));
  });

  it('takes the key as ?key= too, refuses a missing one, and streams a JSON array without alt=sse', async () => {
    const byQuery = await fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent?key=${fake.apiKey}`, { method: 'POST', body: JSON.stringify({ contents: [user] }) });
    expect(byQuery.status).toBe(200);
    const anonymous = await fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', body: JSON.stringify({ contents: [user] }) });
    expect(anonymous.status).toBe(403);
    const array = await post('/v1beta/models/gemini-2.5-flash:streamGenerateContent', { contents: [{ role: 'user', parts: [{ text: 'one two three four' }] }] });
    const chunks = JSON.parse(array.text) as Array<{ candidates: Array<{ finishReason?: string }> }>;
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.at(-1)!.candidates[0].finishReason).toBe('STOP');
  });

  it("accepts every request the gateway's golden fixtures send (a signature it never issued excepted)", async () => {
    const root = new URL('../fixtures/providers/gemini/', import.meta.url);
    const token = await fakeToken();
    for (const dir of readdirSync(root).filter((name) => name.startsWith('request-'))) {
      const request = JSON.parse(readFileSync(new URL(`${dir}/upstream-request.json`, root), 'utf8')) as { path: string; body: unknown };
      const answer = await post(request.path, request.body, { authorization: `Bearer ${token}` });
      if (dir === 'request-gemini3-signatures') {
        expect(answer.status, dir).toBe(400);
        expect(answer.text).toContain('missing a thought_signature');
      } else expect([dir, answer.status]).toEqual([dir, 200]);
    }
  });
});
