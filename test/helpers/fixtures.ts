// Request fixtures shared by the chat and responses suites.
import { PNG } from 'pngjs';

/** A real PNG of the given size as a Data URL, for vision requests. */
export function pngDataUrl(width: number, height: number): string {
  const png = new PNG({ width, height });
  png.data.fill(200);
  return `data:image/png;base64,${PNG.sync.write(png).toString('base64')}`;
}

/** JSON Schema of a weather function's arguments: a string, an enum and a bounded integer, all required. */
export const weatherParameters = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City name' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};
