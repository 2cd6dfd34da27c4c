// Typed reads of request parameters that fail with OpenAI-style 400s naming the parameter.
import { invalidType, invalidValue, missingParam, unknownParam } from './errors.ts';
import type { JsonObject } from './body.ts';

export function rejectUnknown(body: JsonObject, known: ReadonlySet<string>): void {
  for (const key of Object.keys(body)) if (!known.has(key)) throw unknownParam(key);
}

export function optionalNumber(body: JsonObject, name: string, range: { min?: number; max?: number; integer?: boolean } = {}): number | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidType(name, range.integer ? 'an integer' : 'a number');
  if (range.integer && !Number.isInteger(value)) throw invalidType(name, 'an integer');
  if ((range.min !== undefined && value < range.min) || (range.max !== undefined && value > range.max)) {
    const bounds = range.max === undefined ? `at least ${range.min}` : range.min === undefined ? `at most ${range.max}` : `between ${range.min} and ${range.max}`;
    throw invalidValue(name, `Invalid '${name}': ${value}. Expected a value ${bounds}.`);
  }
  return value;
}

export function optionalBoolean(body: JsonObject, name: string): boolean | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw invalidType(name, 'a boolean');
  return value;
}

export function optionalString(body: JsonObject, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidType(name, 'a string');
  return value;
}

export function requiredString(body: JsonObject, name: string): string {
  const value = optionalString(body, name);
  if (value === undefined) throw missingParam(name);
  return value;
}

export function optionalObject(body: JsonObject, name: string): JsonObject | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidType(name, 'an object');
  return value as JsonObject;
}

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
