// Anthropic's Messages API behind the OpenAI chat API: the pure transforms of this folder and the
// x-api-key credential, registered under `provider: anthropic` (providers/registry.ts).
// Anthropic offers no embeddings: the gateway answers 400 for them.
import type { Upstream } from '@tollgate/crds';
import { defaultBaseURL } from '../endpoints.ts';
import type { ProviderModule, ProviderRequest, ProviderTranslation } from '../provider.ts';
import { anthropicAuth } from './auth.ts';
import { translateError } from './errors.ts';
import { ANTHROPIC_VERSION, chatRequest } from './request.ts';
import { chatResponse, chatStopSequence } from './response.ts';
import { chatStream } from './stream.ts';

/** The operator's probe: the cheapest call that needs a valid key (costs no tokens); the whole list, so that the operator can tell which targets' models Anthropic offers. */
function probe(_upstream: Upstream): ProviderRequest {
  return { path: '/v1/models?limit=1000', method: 'GET', headers: { 'anthropic-version': ANTHROPIC_VERSION, accept: 'application/json' }, body: '' };
}

/** The probe's answer is Anthropic's model list, `data[].id`; a page with more after it is not the whole list. */
function probeModels(json: unknown): string[] | undefined {
  const list = json as { data?: unknown; has_more?: unknown } | null;
  const data = list?.data;
  if (!Array.isArray(data) || list?.has_more === true) return undefined;
  return data.map((model) => model?.id).filter((id): id is string => typeof id === 'string');
}

const translation: ProviderTranslation = {
  name: 'anthropic',
  semconvName: 'anthropic',
  defaultBaseURL: (upstream) => defaultBaseURL(upstream) ?? 'https://api.anthropic.com',
  chatRequest,
  chatResponse,
  chatStopSequence,
  chatStream,
  error: translateError,
  probe,
  probeModels,
};

export const anthropic: ProviderModule = { translation, auth: anthropicAuth };
