// Amazon Bedrock: chat through Converse / ConverseStream, embeddings through InvokeModel (Titan, Cohere),
// requests signed with SigV4. See docs/providers/bedrock.md.
import { defaultBaseURL } from '../endpoints.ts';
import type { ProviderModule, ProviderRequest } from '../provider.ts';
import { BedrockAuth } from './auth.ts';
import { embeddings } from './embeddings.ts';
import { translateError } from './errors.ts';
import { chatRequest } from './request.ts';
import { chatResponse, chatStopSequence } from './response.ts';
import { ConverseStreamTranslator } from './stream.ts';

/**
 * The operator's probe: ListAsyncInvokes (`GET /async-invoke?maxResults=1`) on the runtime host. It is
 * authenticated and signed like every call, costs nothing (no tokens), needs no model id, and is served
 * by the same endpoint as Converse, so it proves region, endpoint and credentials together. The
 * control plane's ListFoundationModels would need another host; a 1-token Converse would cost money
 * and need a model the Upstream does not name.
 */
function probe(): ProviderRequest {
  return { path: '/async-invoke?maxResults=1', method: 'GET', headers: { accept: 'application/json' }, body: '' };
}

export const bedrock: ProviderModule = {
  translation: {
    name: 'bedrock',
    semconvName: 'aws.bedrock',
    defaultBaseURL: (upstream) => defaultBaseURL(upstream) as string,
    chatRequest,
    chatResponse,
    chatStopSequence,
    chatStream: (ctx) => new ConverseStreamTranslator(ctx),
    error: translateError,
    embeddings,
    probe,
  },
  auth: new BedrockAuth(),
};
