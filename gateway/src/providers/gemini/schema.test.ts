import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { toGeminiSchema } from './schema.ts';

describe("JSON Schema in Google's OpenAPI subset", () => {
  it('inlines references, turns null alternatives into nullable and type lists into anyOf', () => {
    const schema = {
      type: 'object',
      definitions: { tag: { type: 'string', description: 'a tag' } },
      properties: {
        tag: { $ref: '#/definitions/tag' },
        value: { type: ['string', 'integer'] },
        maybe: { oneOf: [{ type: 'null' }, { type: 'array', items: { $ref: '#/definitions/tag' } }] },
      },
      required: ['tag'],
      additionalProperties: false,
    };
    expect(toGeminiSchema(schema, 'p')).toEqual({
      type: 'object',
      required: ['tag'],
      properties: {
        tag: { type: 'string', description: 'a tag' },
        value: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        maybe: { nullable: true, type: 'array', items: { type: 'string', description: 'a tag' } },
      },
    });
  });

  it('refuses a recursive schema and an unresolvable reference, naming the param', () => {
    const recursive = { $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } }, $ref: '#/$defs/node' };
    const error = (() => {
      try {
        toGeminiSchema(recursive, 'tools[0].function.parameters');
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(error).toBeInstanceOf(ApiError);
    expect(error!.param).toBe('tools[0].function.parameters');
    expect(() => toGeminiSchema({ $ref: 'https://example.com/s.json' }, 'p')).toThrow(/cannot be resolved/);
  });
});
