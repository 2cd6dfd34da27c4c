// Where each provider is reached when an Upstream names no baseURL, and the provider names of
// OpenTelemetry's GenAI semantic conventions. Pure data about providers, shared by the upstream
// settings, telemetry and the translations, so that none of them imports another.
import type { ProviderName, Upstream } from '@tollgate/crds';

export function providerOf(upstream: Upstream): ProviderName {
  return upstream.spec.provider ?? 'openai';
}

/** The provider's public endpoint (the origin its own SDK uses), for an Upstream without baseURL. */
export function defaultBaseURL(upstream: Upstream): string | null {
  const spec = upstream.spec;
  switch (providerOf(upstream)) {
    case 'anthropic':
      return 'https://api.anthropic.com';
    case 'gemini':
      return 'https://generativelanguage.googleapis.com';
    case 'vertex': {
      const location = spec.vertex?.location ?? 'us-central1';
      return location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`;
    }
    case 'bedrock':
      return `https://bedrock-runtime.${spec.bedrock?.region ?? 'us-east-1'}.amazonaws.com`;
    default:
      return null;
  }
}

/** The base URL calls go to: the configured one, else the provider's public endpoint. */
export function baseURLOf(upstream: Upstream): string {
  const url = upstream.spec.baseURL ?? defaultBaseURL(upstream);
  // The schema's rule (baseURL required for openai and azure) makes this unreachable for a valid object.
  if (!url) throw new Error(`Upstream '${upstream.metadata.name}' has no baseURL`);
  return url;
}

/** `gen_ai.provider.name` for a provider that is named, not recognised by host (null: recognise by host). */
export const SEMCONV_PROVIDER: Partial<Record<ProviderName, string>> = {
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'azure.ai.openai',
};
