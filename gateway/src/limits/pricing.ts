// What a request costs, in micros of the gateway's currency (money.ts), from its Model's pricing:
// before it runs, the most it can cost (the reservation a spend budget holds); when it ends, what it
// did cost, from the usage the upstream reported. A model without pricing, and service-test, cost
// nothing. Prices are parsed once per Model object (objects belong to one immutable snapshot).
import type { Model, ModelPricing } from '@tollgate/crds';
import type { Usage } from '../exchange/exchange.ts';
import type { SpendAsk } from './limit-store.ts';
import { parseMoney, perMillion, perSecond, times } from './money.ts';

export type { SpendAsk } from './limit-store.ts';

export interface Prices {
  input: number;
  cachedInput: number;
  output: number;
  perRequest: number;
  perAudioSecond: number;
  perMillionCharacters: number;
  imageDefault: number | null;
  images: Array<{ size?: string; quality?: string; price: number }>;
}

/** How a request is priced: by tokens (chat, completions, responses, embeddings) or by what it asks for. */
export type PricedBy = 'tokens' | 'images' | 'speech' | 'audio';

const compiled = new WeakMap<ModelPricing, Prices>();

/** The Model's prices in micros; null when it has none (it costs nothing). */
export function pricesOf(model: Model | undefined): Prices | null {
  const pricing = model?.spec.pricing;
  if (!pricing) return null;
  let prices = compiled.get(pricing);
  if (!prices) compiled.set(pricing, (prices = compile(pricing)));
  return prices;
}

function compile(p: ModelPricing): Prices {
  const money = (text: string | undefined) => (text === undefined ? 0 : parseMoney(text));
  const input = money(p.inputPerMillion);
  return {
    input,
    cachedInput: p.cachedInputPerMillion === undefined ? input : money(p.cachedInputPerMillion),
    output: money(p.outputPerMillion),
    perRequest: money(p.perRequest),
    perAudioSecond: money(p.perAudioSecond),
    perMillionCharacters: money(p.perMillionCharacters),
    imageDefault: p.perImage?.default === undefined ? null : money(p.perImage.default),
    images: (p.perImage?.prices ?? []).map(({ size, quality, price }) => ({ size, quality, price: money(price) })),
  };
}

/** One image of `size` and `quality` (as the request set them; undefined when it did not). */
export function imagePrice(prices: Prices, size: unknown, quality: unknown): number {
  for (const entry of prices.images) {
    if (entry.size !== undefined && entry.size !== size) continue;
    if (entry.quality !== undefined && entry.quality !== quality) continue;
    return entry.price;
  }
  return prices.imageDefault ?? 0;
}

/** Worst case of a token-priced request: `input` tokens, and its output priced per token by the store. */
export function tokensAsk(prices: Prices, input: number): SpendAsk {
  return { fixed: perMillion([input, prices.input]), outputPerMillion: prices.output, floor: prices.perRequest };
}

/** Worst case of a request priced by what it asks for (images, characters, seconds of audio). */
export function fixedAsk(prices: Prices, by: Exclude<PricedBy, 'tokens'>, quantity: { images?: number; imagePrice?: number; characters?: number; seconds?: number }): SpendAsk {
  let fixed = 0;
  if (by === 'images') fixed = times(quantity.images ?? 1, quantity.imagePrice ?? 0);
  else if (by === 'speech') fixed = perMillion([quantity.characters ?? 0, prices.perMillionCharacters]);
  else if (by === 'audio') fixed = perSecond(quantity.seconds ?? 0, prices.perAudioSecond);
  return { fixed, outputPerMillion: 0, floor: prices.perRequest };
}

/**
 * What an ended request cost. With usage reported, its tokens (cached input and output, reasoning
 * included, at their own prices) or its seconds of audio; without, an answer that failed cost nothing
 * and one that went out (a stream cut short, a format that reports no usage) is charged what was
 * reserved for it: the upstream may have billed it. Images and speech cost what they asked for.
 */
export function settledCost(prices: Prices, by: PricedBy, reserved: number, usage: Usage | null, succeeded: boolean, answered: boolean): number {
  if (by === 'tokens' && usage) {
    const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
    return Math.max(prices.perRequest, perMillion([usage.inputTokens - cached, prices.input], [cached, prices.cachedInput], [usage.outputTokens, prices.output]));
  }
  if (by === 'audio' && usage?.audioSeconds !== undefined) return Math.max(prices.perRequest, perSecond(usage.audioSeconds, prices.perAudioSecond));
  if (!answered || !succeeded) return 0;
  return reserved;
}
