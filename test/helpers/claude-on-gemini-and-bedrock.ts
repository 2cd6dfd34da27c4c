// A gateway with one model on the Gemini API fake (`flash`) and one Claude model on the Bedrock fake
// (`bedrock-claude`), for the Messages API suites that compare the two translated providers, and the
// Anthropic SDK pointed at it with `key`.
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, model, plan, startTestGateway, type newKey, type TestGateway } from './gateway.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';

const API = 'tollgate.dev/v1alpha1';

export interface ClaudeOnGeminiAndBedrock {
  gemini: FakeGemini;
  bedrock: FakeBedrock;
  gw: TestGateway;
  client: Anthropic;
}

/** `envPrefix` names the variables that carry the fakes' credentials (one prefix per suite). */
export async function startClaudeOnGeminiAndBedrock(envPrefix: string, key: ReturnType<typeof newKey>): Promise<ClaudeOnGeminiAndBedrock> {
  const [gemini, bedrock] = await Promise.all([startFakeGemini(), startFakeBedrock()]);
  process.env[`${envPrefix}_GEMINI`] = gemini.apiKey;
  process.env[`${envPrefix}_AWS_ID`] = FAKE_ACCESS_KEY;
  process.env[`${envPrefix}_AWS_SECRET`] = FAKE_SECRET_KEY;
  const gw = await startTestGateway([
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: `${envPrefix}_GEMINI` } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: `${envPrefix}_AWS_ID` }, secretAccessKey: { env: `${envPrefix}_AWS_SECRET` } } } },
    model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
    model('bedrock-claude', [{ upstream: 'aws', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' }]),
    plan('pro', ['flash', 'bedrock-claude']),
    account('acme', 'pro'),
    apiKey(key),
  ]);
  return { gemini, bedrock, gw, client: new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 }) };
}
