// The parameters of service-test's image endpoints, from a JSON body (generations) or multipart
// fields (edits), checked as strictly as OpenAI does: an unknown or ill-typed parameter is a 400
// naming it, so a client finds its mistakes against the free model rather than a paid one.
import { invalidRequest, invalidType, invalidValue, missingParam, unknownParam } from '../http/errors.ts';
import type { ImageStyle } from './images.ts';

export const MAX_SIDE = 2048;
export const MAX_IMAGES = 10;
export const MAX_PROMPT_CHARS = 32000;
/** size=auto for generations; edits keep the input's size instead. */
export const AUTO_SIZE = { width: 1024, height: 1024 };

export interface ImageSize {
  width: number;
  height: number;
}

export interface ImageRequest {
  prompt: string;
  n: number;
  size: ImageSize | 'auto';
  responseFormat: 'b64_json' | 'url';
  style: ImageStyle;
  /** The quality rendered, as OpenAI reports it (never 'auto' or a legacy name). */
  quality: RenderedQuality;
  background: 'transparent' | 'opaque' | 'auto';
  /** The non-empty `safety_identifier`, else the non-empty `user`: what OpenAI reports back. */
  safetyIdentifier: string | null;
}

export type RenderedQuality = 'low' | 'medium' | 'high' | 'xhigh' | 'max';
const QUALITIES = ['standard', 'hd', 'low', 'medium', 'high', 'xhigh', 'max', 'auto'] as const;
/**
 * OpenAI's answer names the quality it rendered, not the one asked for: 'auto' picks one (service-test
 * picks 'medium'), and dall-e's legacy 'standard' and 'hd' are reported as 'medium' and 'high'.
 */
const RENDERED_QUALITY: Record<(typeof QUALITIES)[number], RenderedQuality> = {
  auto: 'medium', standard: 'medium', hd: 'high', low: 'low', medium: 'medium', high: 'high', xhigh: 'xhigh', max: 'max',
};

const SHARED = [
  'model', 'prompt', 'n', 'size', 'response_format', 'quality', 'background', 'output_format', 'output_compression', 'user', 'stream', 'partial_images',
  'safety_identifier', 'complexity', 'frame_count', 'frame_duration_ms', 'svg',
];
const GENERATION_PARAMS = new Set([...SHARED, 'style', 'moderation']);
const EDIT_FIELDS = new Set([...SHARED, 'input_fidelity']);
export const EDIT_FILE_FIELDS = new Set(['image', 'image[]', 'mask', 'markup']);
/** Multipart spells the svg object as svg[model] and svg[reasoning][effort]. */
const SVG_FIELD = /^svg\[(model|reasoning)\](\[effort\])?$/;

/** Reads one parameter: JSON values as sent, multipart values as strings (converted per type). */
interface ParamSource {
  value(name: string): unknown;
  fromForm: boolean;
}

export function readGenerationParams(body: Record<string, unknown>): ImageRequest {
  for (const name of Object.keys(body)) if (!GENERATION_PARAMS.has(name)) throw unknownParam(name);
  const source: ParamSource = { value: (name) => body[name] ?? undefined, fromForm: false };
  return readShared(source, optionalEnum(source, 'style', ['vivid', 'natural']) ?? 'vivid');
}

export function readEditParams(fields: Map<string, string[]>): ImageRequest {
  for (const name of fields.keys()) {
    if (EDIT_FILE_FIELDS.has(name)) throw invalidType(name, 'a file (send it as a file part, e.g. with toFile)');
    if (!EDIT_FIELDS.has(name) && !SVG_FIELD.test(name)) throw unknownParam(name);
  }
  const svgFields = [...fields.keys()].filter((name) => SVG_FIELD.test(name));
  const source: ParamSource = { value: (name) => (name === 'svg' && svgFields.length ? svgFields : fields.get(name)?.at(-1)), fromForm: true };
  optionalEnum(source, 'input_fidelity', ['high', 'low']);
  return readShared(source, 'vivid');
}

function readShared(source: ParamSource, style: ImageStyle): ImageRequest {
  const prompt = source.value('prompt');
  if (prompt === undefined || prompt === '') throw missingParam('prompt');
  if (typeof prompt !== 'string') throw invalidType('prompt', 'a string');
  if (prompt.length > MAX_PROMPT_CHARS) throw invalidValue('prompt', `The prompt is ${prompt.length} characters long; the maximum is ${MAX_PROMPT_CHARS}.`);

  const n = optionalInteger(source, 'n') ?? 1;
  if (n < 1 || n > MAX_IMAGES) throw invalidValue('n', `Invalid n ${n}: service-test makes 1 to ${MAX_IMAGES} images per request.`);

  const sizeValue = optionalString(source, 'size');
  const size = sizeValue === undefined || sizeValue === 'auto' ? 'auto' : parseSize(sizeValue);

  // Only PNG is encoded; the others are real OpenAI formats, so they get 'unsupported', not 'invalid'.
  optionalEnum(source, 'output_format', ['png'], ['jpeg', 'webp', 'gif', 'svg']);
  // Checked as OpenAI checks them, then refused for what they need: a GIF or SVG output.
  optionalEnum(source, 'complexity', ['low', 'medium', 'high']);
  for (const name of ['frame_count', 'frame_duration_ms']) {
    const value = optionalInteger(source, name);
    if (value === undefined) continue;
    if (name === 'frame_count' && (value < 2 || value > 16)) throw invalidValue(name, 'frame_count must be between 2 and 16.');
    if (value < 0) throw invalidValue(name, `${name} must not be negative.`);
    throw invalidRequest(`${name} is only supported with output_format 'gif', which service-test does not produce.`, name, 'unsupported_value');
  }
  if (source.value('svg') !== undefined) {
    checkSvg(source);
    throw invalidRequest("svg is only supported with output_format 'svg', which service-test does not produce.", 'svg', 'unsupported_value');
  }
  const safetyIdentifier = optionalString(source, 'safety_identifier');
  const compression = optionalInteger(source, 'output_compression');
  if (compression !== undefined && (compression < 0 || compression > 100)) throw invalidValue('output_compression', 'output_compression must be between 0 and 100.');
  const partialImages = optionalInteger(source, 'partial_images');
  if (partialImages !== undefined && (partialImages < 0 || partialImages > 3)) throw invalidValue('partial_images', 'partial_images must be between 0 and 3.');
  if (optionalBoolean(source, 'stream')) {
    throw invalidRequest('service-test does not stream images; leave stream unset or false.', 'stream', 'unsupported_value');
  }
  optionalEnum(source, 'moderation', ['low', 'auto']);
  const user = optionalString(source, 'user');

  return {
    prompt,
    n,
    size,
    responseFormat: optionalEnum(source, 'response_format', ['b64_json', 'url']) ?? 'b64_json',
    style,
    quality: RENDERED_QUALITY[optionalEnum(source, 'quality', QUALITIES) ?? 'auto'],
    background: optionalEnum(source, 'background', ['transparent', 'opaque', 'auto']) ?? 'auto',
    safetyIdentifier: safetyIdentifier || user || null,
  };
}

/** The svg object: {model: string, reasoning?: {effort?: string} | null}, from JSON or multipart svg[...] fields. */
function checkSvg(source: ParamSource): void {
  const value = source.value('svg');
  if (source.fromForm) {
    if (!Array.isArray(value)) throw invalidType('svg', "an object (multipart fields 'svg[model]' and 'svg[reasoning][effort]')");
    return;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidType('svg', 'an object');
  const svg = value as Record<string, unknown>;
  for (const key of Object.keys(svg)) if (key !== 'model' && key !== 'reasoning') throw unknownParam(`svg.${key}`);
  if (typeof svg.model !== 'string') throw invalidType('svg.model', 'a string');
  const reasoning = svg.reasoning;
  if (reasoning !== undefined && reasoning !== null && (typeof reasoning !== 'object' || Array.isArray(reasoning))) throw invalidType('svg.reasoning', 'an object');
}

export function parseSize(value: string): ImageSize {
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(value);
  const width = match ? Number(match[1]) : 0;
  const height = match ? Number(match[2]) : 0;
  if (!match || width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
    throw invalidValue('size', `Invalid size '${value}': use '<width>x<height>' with each side from 1 to ${MAX_SIDE} pixels (e.g. '1024x1024'), or 'auto'.`);
  }
  return { width, height };
}

function optionalString(source: ParamSource, name: string): string | undefined {
  const value = source.value(name);
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidType(name, 'a string');
  return value;
}

function optionalEnum<T extends string>(source: ParamSource, name: string, allowed: readonly T[], unsupported: readonly string[] = []): T | undefined {
  const value = optionalString(source, name);
  if (value === undefined) return undefined;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  const choices = allowed.map((v) => `'${v}'`).join(', ');
  if (unsupported.includes(value)) throw invalidRequest(`service-test cannot produce ${name} '${value}'; supported: ${choices}.`, name, 'unsupported_value');
  throw invalidValue(name, `Invalid value '${value}' for ${name}; supported values are ${[...allowed, ...unsupported].map((v) => `'${v}'`).join(', ')}.`);
}

function optionalInteger(source: ParamSource, name: string): number | undefined {
  const value = source.value(name);
  if (value === undefined) return undefined;
  if (source.fromForm && typeof value === 'string' && /^\s*-?\d{1,9}\s*$/.test(value)) return Number(value);
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw invalidType(name, 'an integer');
}

function optionalBoolean(source: ParamSource, name: string): boolean | undefined {
  const value = source.value(name);
  if (value === undefined) return undefined;
  if (typeof value === 'boolean') return value;
  if (source.fromForm && (value === 'true' || value === 'false')) return value === 'true';
  throw invalidType(name, 'a boolean');
}
