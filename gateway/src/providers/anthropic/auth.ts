// Anthropic's API key, from the Upstream's `credentials`, in the `x-api-key` header of each attempt.
// Nothing of the client's own key is ever forwarded: the request the translation builds carries no
// credential, and this is the only header added to it.
import type { Upstream } from '@tollgate/crds';
import { ProviderAuthError, type ProviderAuth, type ReadCredential } from '../auth.ts';

function describe(upstream: Upstream): string {
  const ref = upstream.spec.credentials;
  if (!ref) return 'no credentials';
  return 'env' in ref ? `the environment variable ${ref.env}` : `the key '${ref.secretRef.key}' of Secret '${ref.secretRef.name}'`;
}

function apiKey(upstream: Upstream, read: ReadCredential): string {
  const ref = upstream.spec.credentials;
  if (!ref) throw new ProviderAuthError(`Upstream '${upstream.metadata.name}' (provider anthropic) has no credentials: set spec.credentials to the Anthropic API key.`);
  const key = read(ref)?.trim();
  if (!key) throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': the Anthropic API key is missing (${describe(upstream)} is not set).`);
  return key;
}

export const anthropicAuth: ProviderAuth = {
  async authorize(_request, target, read) {
    return { 'x-api-key': apiKey(target.upstream, read) };
  },
  secrets(upstream, read) {
    const ref = upstream.spec.credentials;
    const key = ref ? read(ref)?.trim() : undefined;
    return key ? [key] : [];
  },
};
