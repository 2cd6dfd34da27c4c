import { describe, expect, it } from 'vitest';
import { fromAnthropicToolId, toAnthropicToolId } from './tool-ids.ts';

describe("tool ids in Anthropic's charset", () => {
  it('keeps ids already in the charset as they are', () => {
    for (const id of ['toolu_01A09q90qw90lq917835lq9', 'call_abc-123', 'tooluse_fake1']) {
      expect(toAnthropicToolId(id)).toBe(id);
      expect(fromAnthropicToolId(id)).toBe(id);
    }
  });

  it('encodes other ids into the charset and decodes them back exactly', () => {
    for (const id of ['functions.get_weather:0', 'call_1__thought__ab+/cd==', 'id with spaces é', '', 'toolu_tg_looks-encoded']) {
      const encoded = toAnthropicToolId(id);
      expect(encoded).toMatch(/^[a-zA-Z0-9_-]+$/);
      expect(fromAnthropicToolId(encoded)).toBe(id);
    }
  });

  it("leaves a client's own id that merely starts like an encoded one", () => {
    expect(fromAnthropicToolId('toolu_tg_x')).toBe('toolu_tg_x');
  });
});
