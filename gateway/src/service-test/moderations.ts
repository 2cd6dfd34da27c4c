// service-test's moderation answer: deterministic and permissive (nothing flagged, every category
// false, every score 0), in OpenAI's shape, one result per input (a multimodal array is one input).
import { randomHexId } from './random-ids.ts';
import type { JsonObject } from '../http/body.ts';
import { invalidType, invalidValue, missingParam } from '../http/errors.ts';
import { isObject, rejectUnknown } from '../http/params.ts';

const KNOWN = new Set(['model', 'input']);
export const MODERATION_CATEGORIES = [
  'harassment', 'harassment/threatening', 'hate', 'hate/threatening', 'illicit', 'illicit/violent', 'self-harm',
  'self-harm/intent', 'self-harm/instructions', 'sexual', 'sexual/minors', 'violence', 'violence/graphic',
];
/** Categories OpenAI also judges in images; the others are judged in text only. */
const IMAGE_CATEGORIES = new Set(['self-harm', 'self-harm/intent', 'self-harm/instructions', 'sexual', 'violence', 'violence/graphic']);

export function moderate(body: JsonObject, model: string) {
  rejectUnknown(body, KNOWN);
  const inputs = parseInputs(body.input);
  const results = inputs.map((types) => ({
    flagged: false,
    categories: Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, false])),
    category_scores: Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, 0])),
    category_applied_input_types: Object.fromEntries(MODERATION_CATEGORIES.map((c) => [c, types.filter((t) => t === 'text' || IMAGE_CATEGORIES.has(c))])),
  }));
  return { id: randomHexId('modr-', 12), model, results };
}

/** The input types of each input: a string, an array of strings, or one array of text/image_url parts. */
function parseInputs(value: unknown): Array<Array<'text' | 'image'>> {
  if (value === undefined || value === null) throw missingParam('input');
  if (typeof value === 'string') return [['text']];
  if (!Array.isArray(value) || value.length === 0) throw invalidType('input', 'a string, an array of strings, or an array of text and image_url objects');
  if (value.every((v) => typeof v === 'string')) return value.map(() => ['text']);
  const types = new Set<'text' | 'image'>();
  value.forEach((part, i) => {
    if (!isObject(part)) throw invalidType(`input[${i}]`, 'a string or an object');
    if (part.type === 'text' && typeof part.text === 'string') types.add('text');
    else if (part.type === 'image_url' && isObject(part.image_url) && typeof part.image_url.url === 'string') types.add('image');
    else throw invalidValue(`input[${i}]`, `Invalid 'input[${i}]': expected {"type":"text","text":…} or {"type":"image_url","image_url":{"url":…}}.`);
  });
  return [[...types]];
}
