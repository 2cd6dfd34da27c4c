// The translated providers this gateway knows, by `Upstream.spec.provider`. Each folder is pure
// transforms plus its auth (provider.ts, auth.ts); an Upstream of a provider missing here is refused
// with a clear 400 rather than sent untranslated.
import type { Upstream } from '@tollgate/crds';
import { anthropic } from './anthropic/index.ts';
import { bedrock } from './bedrock/index.ts';
import { providerOf } from './endpoints.ts';
import { gemini, vertex } from './gemini/index.ts';
import { isClaudeOnVertex } from './gemini/vertex-claude.ts';
import type { ProviderModule, TranslatedProvider } from './provider.ts';

export type ProviderRegistry = Partial<Record<TranslatedProvider, ProviderModule>>;

const TRANSLATED = new Set<string>(['anthropic', 'gemini', 'vertex', 'bedrock']);

/** Every provider built into the gateway. */
export function builtInProviders(): ProviderRegistry {
  return { anthropic, bedrock, gemini, vertex };
}

/** True when requests to `upstream` are translated (it does not speak the OpenAI API). */
export function isTranslated(upstream: Upstream): boolean {
  return TRANSLATED.has(providerOf(upstream));
}

/** The translation for `upstream`, null for an OpenAI-compatible one (openai, azure). */
export function moduleOf(registry: ProviderRegistry, upstream: Upstream): ProviderModule | null {
  const provider = providerOf(upstream);
  if (!TRANSLATED.has(provider)) return null;
  const module = registry[provider as TranslatedProvider];
  if (!module) throw new Error(`no translation is registered for provider '${provider}'`);
  return module;
}

/**
 * True when Anthropic's Messages API reaches `model` on `upstream` as it is (relayed, not translated
 * through chat): Anthropic itself, and Claude on Vertex AI, which speaks the same API on its own paths.
 */
export function speaksMessages(upstream: Upstream, model: string | null | undefined): boolean {
  const provider = providerOf(upstream);
  return provider === 'anthropic' || (provider === 'vertex' && typeof model === 'string' && isClaudeOnVertex(model));
}

/** True when `module` offers embeddings for `model` on `upstream` (Claude has none, on Vertex as on Anthropic). */
export function embedsWith(module: ProviderModule, upstream: Upstream, model: string | null | undefined): boolean {
  if (!module.translation.embeddings) return false;
  return !(providerOf(upstream) === 'vertex' && typeof model === 'string' && isClaudeOnVertex(model));
}
