// POST /v1/images/variations answered by service-test like an edit without a prompt: the input scaled
// to the asked size with a pattern laid over it, a different one per variant.
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import { invalidType, invalidValue, missingParam, unknownParam } from '../../http/errors.ts';
import type { ImageRequest } from '../../service-test/images-params.ts';
import type { SpooledForm } from '../../storage/multipart-spool.ts';
import { imageResult, readInput } from './service-test-images.ts';

const FIELDS = new Set(['model', 'n', 'size', 'response_format', 'user']);
/** dall-e-2's sizes, the only model OpenAI offers variations with. */
const SIZES = new Set(['256x256', '512x512', '1024x1024']);

export async function serviceTestImageVariations(ctx: Context, deps: GatewayDeps, form: SpooledForm): Promise<void> {
  for (const file of form.files) if (file.field !== 'image') throw unknownParam(file.field);
  for (const name of form.fields.keys()) {
    if (name === 'image') throw invalidType('image', 'a file (send it as a file part, e.g. with toFile)');
    if (!FIELDS.has(name)) throw unknownParam(name);
  }
  const imageParts = form.files.filter((f) => f.field === 'image');
  if (imageParts.length === 0) throw missingParam('image');
  if (imageParts.length > 1) throw invalidValue('image', `Send exactly one image; got ${imageParts.length}.`);
  const n = Number(form.field('n') ?? '1');
  if (!Number.isInteger(n) || n < 1 || n > 10) throw invalidValue('n', "Invalid 'n': expected an integer from 1 to 10.");
  const sizeText = form.field('size') ?? '1024x1024';
  if (!SIZES.has(sizeText)) throw invalidValue('size', `Invalid size '${sizeText}': expected '256x256', '512x512' or '1024x1024'.`);
  const responseFormat = form.field('response_format') ?? 'url';
  if (responseFormat !== 'url' && responseFormat !== 'b64_json') throw invalidValue('response_format', "Invalid 'response_format': expected 'url' or 'b64_json'.");

  const { picture } = await readInput(form, imageParts[0], 'image');
  const side = Number(sizeText.split('x')[0]);
  const prompt = `a variation of ${imageParts[0].filename}`;
  const request: ImageRequest = { prompt, n, size: { width: side, height: side }, responseFormat, style: 'vivid', quality: 'medium', background: 'opaque', safetyIdentifier: null };
  const patterns = Array.from({ length: n }, (_, variant) => ({ prompt, variant, width: side, height: side, style: 'vivid' as const, transparentBackground: false }));
  const pngs = await deps.painter.paint({ kind: 'edit', patterns, images: [picture], mask: null });
  ctx.body = await imageResult(ctx, deps, deps.images, request, { width: side, height: side }, pngs);
}
