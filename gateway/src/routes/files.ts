// /v1/files: upload, list, retrieve, download and delete. No model is involved, so where files live
// is decided per account (docs/adr/0005): free accounts, and plans that reach no upstream marked
// `files: true`, use the gateway's own store (storage/files.ts), scoped to the uploading account;
// other accounts' files are kept by that upstream (files-upstream.ts), ids routed back to it.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { invalidRequest, invalidType, invalidValue, missingParam, notFound, unknownParam } from '../http/errors.ts';
import { readMultipart, singleField, type MultipartResult } from '../http/multipart.ts';
import { FILE_PURPOSES, type ListQuery, type NewFile, type StagedUpload } from '../storage/files.ts';
import { forwardFileById, listWithUpstream, uploadToUpstream } from './files-upstream.ts';
import { principalOf } from './model-access.ts';
import { formBodyOf } from './multipart-relay.ts';
import { accountOf, filesUpstreamOf, upstreamObjectsFor } from './upstream-objects.ts';

const FORM_FIELDS = new Set(['purpose', 'expires_after[anchor]', 'expires_after[seconds]']);
const MAX_LIST_LIMIT = 10_000;
const MIN_EXPIRY_SECONDS = 3600;
const MAX_EXPIRY_SECONDS = 30 * 24 * 3600;
const PLAIN_MIME_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

export function registerFileRoutes(router: Router, deps: GatewayDeps): void {
  const objects = upstreamObjectsFor(deps);
  const store = objects.localFiles;

  router.post('/v1/files', async (ctx) => {
    const upstream = filesUpstreamOf(principalOf(ctx));
    if (upstream) return uploadToUpstream(ctx, deps, objects, upstream);
    const account = accountOf(ctx);
    const staged: StagedUpload[] = [];
    try {
      const form = await readMultipart(formBodyOf(ctx, deps), async (part) => {
        if (part.field !== 'file') {
          part.stream.resume();
          return null;
        }
        const upload = await store.stage(part.stream, account);
        staged.push(upload);
        return upload;
      });
      const upload = soleFilePart(form);
      const file = parseUploadFields(form, account, upload.mimeType, upload.filename);
      if (upload.result.bytes === 0) throw invalidRequest('The uploaded file is empty.', 'file', 'empty_file');
      const record = await store.commit(upload.result, file);
      staged.splice(staged.indexOf(upload.result), 1);
      ctx.body = record;
    } finally {
      // Whatever was not committed (a refused form, a second part, a failure) must not stay on disk.
      await Promise.all(staged.map((s) => store.discard(s)));
    }
  });

  router.get('/v1/files', async (ctx) => {
    const query = parseListQuery(ctx);
    const upstream = filesUpstreamOf(principalOf(ctx));
    // A cursor from the gateway's own files continues there: they are listed after the upstream's.
    const localCursor = query.after !== null && (await store.get(accountOf(ctx), query.after)) !== undefined;
    if (upstream && !localCursor) return listWithUpstream(ctx, deps, objects, upstream, query);
    const result = await store.list(accountOf(ctx), query);
    if (!result.ok) throw invalidValue('after', `The cursor '${clip(query.after!)}' is not a file of this account.`);
    ctx.body = {
      object: 'list',
      data: result.data,
      has_more: result.hasMore,
      first_id: result.data[0]?.id ?? null,
      last_id: result.data.at(-1)?.id ?? null,
    };
  });

  router.get('/v1/files/:file_id', async (ctx) => {
    const record = await store.get(accountOf(ctx), ctx.params.file_id);
    if (record) ctx.body = record;
    else if (!(await forwardFileById(ctx, deps, objects, ctx.params.file_id, false))) throw fileNotFound(ctx.params.file_id);
  });

  router.get('/v1/files/:file_id/content', async (ctx) => {
    const opened = await store.openContent(accountOf(ctx), ctx.params.file_id);
    if (!opened) {
      if (await forwardFileById(ctx, deps, objects, ctx.params.file_id, true)) return;
      throw fileNotFound(ctx.params.file_id);
    }
    ctx.body = opened.stream();
    ctx.set('Content-Type', PLAIN_MIME_TYPE.test(opened.contentType) ? opened.contentType : 'application/octet-stream');
    ctx.length = opened.record.bytes;
    // Uploaded bytes are the client's own data, never a page of this origin: no sniffing, no rendering.
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(opened.record.filename)}`);
  });

  router.delete('/v1/files/:file_id', async (ctx) => {
    if (await store.remove(accountOf(ctx), ctx.params.file_id)) ctx.body = { id: ctx.params.file_id, object: 'file', deleted: true };
    else if (!(await forwardFileById(ctx, deps, objects, ctx.params.file_id, false))) throw fileNotFound(ctx.params.file_id);
  });
}

function soleFilePart(form: MultipartResult<StagedUpload | null>) {
  const stray = form.files.find((f) => f.field !== 'file');
  if (stray) throw unknownParam(stray.field);
  const parts = form.files.filter((f): f is typeof f & { result: StagedUpload } => f.result !== null);
  if (parts.length === 0) {
    if (form.fields.has('file')) throw invalidType('file', 'a file upload (a form part with a filename), not a text field');
    throw missingParam('file');
  }
  if (parts.length > 1) throw invalidRequest("Send exactly one file in 'file'.", 'file', 'too_many_files');
  return parts[0];
}

function parseUploadFields(form: MultipartResult<unknown>, account: string, mimeType: string, filename: string): NewFile {
  for (const name of form.fields.keys()) if (!FORM_FIELDS.has(name)) throw unknownParam(name);
  const purpose = singleField(form.fields, 'purpose');
  if (purpose === undefined || purpose === '') throw missingParam('purpose');
  if (!FILE_PURPOSES.includes(purpose)) {
    throw invalidValue('purpose', `Invalid value for 'purpose': '${clip(purpose)}'. Supported values are: ${FILE_PURPOSES.map((p) => `'${p}'`).join(', ')}.`);
  }
  return { account, filename, purpose, contentType: mimeType, expiresAfterSeconds: parseExpiresAfter(form.fields) };
}

function parseExpiresAfter(fields: Map<string, string[]>): number | null {
  const anchor = singleField(fields, 'expires_after[anchor]');
  const seconds = singleField(fields, 'expires_after[seconds]');
  if (anchor === undefined && seconds === undefined) return null;
  if (anchor !== 'created_at') throw invalidValue('expires_after.anchor', "Invalid value for 'expires_after.anchor': the only supported anchor is 'created_at'.");
  const value = seconds !== undefined && /^\d+$/.test(seconds) ? Number(seconds) : NaN;
  if (!(value >= MIN_EXPIRY_SECONDS && value <= MAX_EXPIRY_SECONDS)) {
    throw invalidValue('expires_after.seconds', `Invalid value for 'expires_after.seconds': expected an integer from ${MIN_EXPIRY_SECONDS} to ${MAX_EXPIRY_SECONDS}.`);
  }
  return value;
}

function parseListQuery(ctx: Context): ListQuery {
  const purpose = queryValue(ctx, 'purpose');
  const order = queryValue(ctx, 'order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidValue('order', `Invalid value for 'order': '${clip(order)}'. Supported values are: 'asc' and 'desc'.`);
  const limitText = queryValue(ctx, 'limit');
  const limit = limitText === undefined ? MAX_LIST_LIMIT : /^\d+$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) throw invalidValue('limit', `Invalid value for 'limit': expected an integer from 1 to ${MAX_LIST_LIMIT}.`);
  const after = queryValue(ctx, 'after');
  return { purpose: purpose || null, order, limit, after: after || null };
}

function queryValue(ctx: Context, name: string): string | undefined {
  const value = ctx.query[name];
  if (Array.isArray(value)) throw invalidValue(name, `Give '${name}' at most once.`);
  return value;
}

function fileNotFound(id: string) {
  return notFound(`No such File object: ${clip(id)}`, 'file_id', 'file_not_found');
}

/** Echo client values in messages, but never an arbitrarily long one. */
function clip(value: string): string {
  return value.length > 100 ? `${value.slice(0, 100)}…` : value;
}
