// POST /v1/images/generations and /v1/images/edits answered by service-test: real PNGs drawn from the
// prompt, returned as base64 or as URLs served by the gateway for an hour.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Context } from 'koa';
import type { PNG } from 'pngjs';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { invalidValue, missingParam, unknownParam } from '../../http/errors.ts';
import { editPicture, encodePng, paintPattern, revisePrompt, type PatternOptions } from '../../service-test/images.ts';
import { decodePng } from '../../service-test/images-input.ts';
import { AUTO_SIZE, EDIT_FILE_FIELDS, MAX_SIDE, readEditParams, readGenerationParams, type ImageRequest, type ImageSize } from '../../service-test/images-params.ts';
import type { ImageKeeper } from '../../service-test/images-store.ts';
import type { SpooledForm } from '../../storage/multipart-spool.ts';

/** OpenAI's gpt-image-1 accepts up to 16 input images per edit. */
const MAX_EDIT_IMAGES = 16;

export async function serviceTestImageGenerations(ctx: Context, deps: GatewayDeps, body: JsonObject): Promise<void> {
  const store = deps.images;
  const request = readGenerationParams(body);
  const size = request.size === 'auto' ? AUTO_SIZE : request.size;
  const pngs: Buffer[] = [];
  for (let variant = 0; variant < request.n; variant++) {
    pngs.push(encodePng(paintPattern(patternOptions(request, size, variant))));
    // Large pictures take a while to paint; let other requests through between them.
    await yieldToEventLoop();
  }
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

  const images: PNG[] = [];
  for (const part of imageParts) images.push(decodePng(await form.read(part), 'image', part.filename));
  const mask = maskParts.length ? decodePng(await form.read(maskParts[0]), 'mask', maskParts[0].filename) : null;
  if (mask && !mask.alpha) {
    throw invalidValue('mask', 'The mask has no alpha channel. Its fully transparent pixels (alpha 0) mark the area to repaint; send an RGBA PNG.');
  }
  if (mask && (mask.width !== images[0].width || mask.height !== images[0].height)) {
    throw invalidValue('mask', `The mask is ${mask.width}x${mask.height} but the image is ${images[0].width}x${images[0].height}; they must be the same size.`);
  }

  const size = request.size === 'auto' ? fitWithin(images[0], MAX_SIDE) : request.size;
  const pngs: Buffer[] = [];
  for (let variant = 0; variant < request.n; variant++) {
    pngs.push(encodePng(editPicture({ ...patternOptions(request, size, variant), images, mask })));
    await yieldToEventLoop();
  }
  ctx.body = await imageResult(ctx, deps, store, request, size, pngs);
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
  };
}

/** An edit keeps the input's size unless asked otherwise, scaled down only past the output limit. */
function fitWithin(image: PNG, maxSide: number): ImageSize {
  const scale = Math.min(1, maxSide / Math.max(image.width, image.height));
  return { width: Math.max(1, Math.round(image.width * scale)), height: Math.max(1, Math.round(image.height * scale)) };
}
