// The top-level key cap of JSON bodies: a body of tens of thousands of members is refused with a
// clear 400 before any per-key work, and a body at the cap is still forwarded faithfully.
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { describe, expect, it } from 'vitest';
import { MAX_TOP_LEVEL_KEYS, jsonBytesToForward, readJsonBody } from './body.ts';
import { ApiError } from './errors.ts';

function contextOf(text: string): Context {
  const req = Readable.from([Buffer.from(text)]);
  const headers: Record<string, string> = { 'content-length': String(Buffer.byteLength(text)) };
  return { req, get: (name: string) => headers[name.toLowerCase()] ?? '' } as unknown as Context;
}

function bodyWithKeys(count: number): string {
  const members: string[] = ['"model":"gpt-4o"'];
  for (let i = 1; i < count; i++) members.push(`"k${i}":${i}`);
  return `{${members.join(',')}}`;
}

describe('top-level keys of a JSON body', () => {
  it('refuses 80,000 top-level keys (0.87 MB) with a 400 that names the limit', async () => {
    const text = bodyWithKeys(80_000);
    expect(text.length).toBeGreaterThan(800_000);
    const error = await readJsonBody(contextOf(text), 50 * 1024 * 1024).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).code).toBe('too_many_parameters');
    expect((error as ApiError).message).toContain(String(MAX_TOP_LEVEL_KEYS));
  });

  it('accepts a body at the cap, and forwards it with added members spliced in', async () => {
    const body = await readJsonBody(contextOf(bodyWithKeys(MAX_TOP_LEVEL_KEYS)), 50 * 1024 * 1024);
    expect(Object.keys(body)).toHaveLength(MAX_TOP_LEVEL_KEYS);
    body.stream_options = { include_usage: true };
    const forwarded = JSON.parse(jsonBytesToForward(body, 'upstream-model').toString('utf8'));
    expect(Object.keys(forwarded)).toHaveLength(MAX_TOP_LEVEL_KEYS + 1);
    expect(forwarded.model).toBe('upstream-model');
    expect(forwarded.stream_options).toEqual({ include_usage: true });
    expect(forwarded[`k${MAX_TOP_LEVEL_KEYS - 1}`]).toBe(MAX_TOP_LEVEL_KEYS - 1);
  });
});
