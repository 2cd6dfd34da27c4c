// POST /v1/images/generations and /v1/images/edits answered by service-test: real PNGs drawn from the
// prompt, returned as base64 or as URLs served by the gateway for an hour. The pictures are drawn in
// worker threads (service-test/image-painter.ts); here the request is checked and the answer built.
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { invalidValue, missingParam, unknownParam } from '../../http/errors.ts';
import { revisePrompt, type PatternOptions } from '../../service-test/images.ts';
import { readPngHeader, type PngHeader } from '../../service-test/images-input.ts';
import type { InputPicture } from '../../service-test/image-worker.ts';
import { AUTO_SIZE, EDIT_FILE_FIELDS, MAX_SIDE, readEditParams, readGenerationParams, type ImageRequest, type ImageSize } from '../../service-test/images-params.ts';
import type { ImageKeeper } from '../../service-test/images-store.ts';
import type { SpooledForm, SpooledPart } from '../../storage/multipart-spool.ts';

/** OpenAI's gpt-image-1 accepts up to 16 input images per edit. */
const MAX_EDIT_IMAGES = 16;

export async function serviceTestImageGenerations(ctx: Context, deps: GatewayDeps, body: JsonObject): Promise<void> {
  const store = deps.images;
  const request = readGenerationParams(body);
  const size = request.size === 'auto' ? AUTO_SIZE : request.size;
  const pngs = await deps.painter.paint({ kind: 'generate', patterns: variants(request, size) });
  ctx.body = await imageResult(ctx, deps, store, request, size, pngs);
}

export async function serviceTestImageEdits(ctx: Context, deps: GatewayDeps, form: SpooledForm): Promise<void> {
  const store = deps.images;
  // The spool keeps the client's order, which image[] relies on.
  for (const file of form.files) if (!EDIT_FILE_FIELDS.has(file.field)) throw unknownParam(file.field);
  const request = readEditParams(form.fields);
  const imageParts = form.files.filter((f) => f.field === 'image' || f.field === 'image[]');
  const maskParts = form.files.filter((f) => f.field === 'mask');
  if (imageParts.length === 0) throw missingParam('image');
  if (imageParts.length > MAX_EDIT_IMAGES) throw invalidValue('image', `Send at most ${MAX_EDIT_IMAGES} images; got ${imageParts.length}.`);
  if (maskParts.length > 1) throw invalidValue('mask', `Send at most one mask; got ${maskParts.length}.`);

  const images: InputPicture[] = [];
  const headers: PngHeader[] = [];
  for (const part of imageParts) {
    const input = await readInput(form, part, 'image');
    images.push(input.picture);
    headers.push(input.header);
  }
  const { picture: maskPicture, header: mask } = maskParts.length ? await readInput(form, maskParts[0], 'mask') : { picture: null, header: null };
  if (mask && !mask.alpha) {
    throw invalidValue('mask', 'The mask has no alpha channel. Its fully transparent pixels (alpha 0) mark the area to repaint; send an RGBA PNG.');
  }
  if (mask && (mask.width !== headers[0].width || mask.height !== headers[0].height)) {
    throw invalidValue('mask', `The mask is ${mask.width}x${mask.height} but the image is ${headers[0].width}x${headers[0].height}; they must be the same size.`);
  }
  await checkMarkup(form, headers[0], mask !== null);

  const size = request.size === 'auto' ? fitWithin(headers[0], MAX_SIDE) : request.size;
  const pngs = await deps.painter.paint({ kind: 'edit', patterns: variants(request, size), images, mask: maskPicture });
  ctx.body = await imageResult(ctx, deps, store, request, size, pngs);
}

/**
 * `markup` (a transparent PNG drawn over the first image to guide the edit) is checked as OpenAI
 * checks it, then not used: service-test's edit follows the prompt and the mask only.
 */
async function checkMarkup(form: SpooledForm, image: PngHeader, withMask: boolean): Promise<void> {
  const parts = form.files.filter((f) => f.field === 'markup');
  if (parts.length === 0) return;
  if (parts.length > 1) throw invalidValue('markup', `Send at most one markup image; got ${parts.length}.`);
  if (withMask) throw invalidValue('markup', 'markup cannot be combined with mask; send one or the other.');
  const { header } = await readInput(form, parts[0], 'markup');
  if (!header.alpha) throw invalidValue('markup', 'The markup has no alpha channel; it must be a transparent PNG drawn over the image.');
  if (header.width !== image.width || header.height !== image.height) {
    throw invalidValue('markup', `The markup is ${header.width}x${header.height} but the image is ${image.width}x${image.height}; they must be the same size.`);
  }
}

/**
 * An uploaded PNG, read back from the spool with its header checked (400 before any decoding). Its
 * bytes and its decoded size count against the memory budget until the request ends.
 */
export async function readInput(form: SpooledForm, part: SpooledPart, param: string): Promise<{ picture: InputPicture; header: PngHeader }> {
  const bytes = await form.read(part);
  const header = readPngHeader(bytes, param, part.filename);
  form.hold(header.decodedBytes);
  return { picture: { bytes, param, filename: part.filename }, header };
}

function variants(request: ImageRequest, size: ImageSize): PatternOptions[] {
  return Array.from({ length: request.n }, (_, variant) => patternOptions(request, size, variant));
}

function patternOptions(request: ImageRequest, size: ImageSize, variant: number): PatternOptions {
  return { prompt: request.prompt, variant, width: size.width, height: size.height, style: request.style, transparentBackground: request.background === 'transparent' };
}

export async function imageResult(ctx: Context, deps: GatewayDeps, store: ImageKeeper, request: ImageRequest, size: ImageSize, pngs: Buffer[]) {
  // Koa 3's ctx.origin is the Origin request header, not this server's origin: build it from the
  // Host the client used (X-Forwarded-* only count when the app is set to trust a proxy).
  const base = (deps.config.publicURL ?? `${ctx.protocol}://${ctx.host}`).replace(/\/+$/, '');
  const data = [];
  for (const [variant, png] of pngs.entries()) {
    const revised_prompt = revisePrompt(request.prompt, variant, request.style);
    if (request.responseFormat === 'url') data.push({ url: `${base}/images/${await store.save(png)}.png`, revised_prompt });
    else data.push({ b64_json: png.toString('base64'), revised_prompt });
  }
  return {
    created: Math.floor(Date.now() / 1000),
    data,
    background: request.background === 'transparent' ? 'transparent' : 'opaque',
    output_format: 'png',
    quality: request.quality,
    size: `${size.width}x${size.height}`,
    ...(request.safetyIdentifier !== null ? { safety_identifier: request.safetyIdentifier } : {}),
  };
}

/** An edit keeps the input's size unless asked otherwise, scaled down only past the output limit. */
function fitWithin(image: { width: number; height: number }, maxSide: number): ImageSize {
  const scale = Math.min(1, maxSide / Math.max(image.width, image.height));
  return { width: Math.max(1, Math.round(image.width * scale)), height: Math.max(1, Math.round(image.height * scale)) };
}
