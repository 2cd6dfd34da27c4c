// The translated providers this gateway knows, by `Upstream.spec.provider`. Each folder is pure
// transforms plus its auth (provider.ts, auth.ts); an Upstream of a provider missing here is refused
// with a clear 400 rather than sent untranslated.
import type { Upstream } from '@tollgate/crds';
import { anthropic } from './anthropic/index.ts';
import { bedrock } from './bedrock/index.ts';
import { providerOf } from './endpoints.ts';
import { gemini, vertex } from './gemini/index.ts';
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
