// Reading requests and writing answers for the fake Kubernetes API server: selectors, write and
// delete options from the query and body, continue tokens, JSON bodies, and Status-shaped answers
// with Warning headers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResourceType } from './kube-resources.ts';
import { parseFieldSelector, parseLabelSelector, type ObjectSelector } from './kube-selectors.ts';
import { ApiError, type DeleteOptions, type WriteOptions } from './kube-types.ts';

export function selectorOf(params: URLSearchParams, resource: ResourceType): ObjectSelector {
  let labels: (labels: Record<string, string> | undefined) => boolean;
  let fields: ObjectSelector;
  try {
    labels = parseLabelSelector(params.get('labelSelector'));
  } catch (error) {
    throw new ApiError(400, 'BadRequest', `unable to parse requirement: ${(error as Error).message}`);
  }
  try {
    fields = parseFieldSelector(params.get('fieldSelector'), resource.kind);
  } catch (error) {
    throw new ApiError(400, 'BadRequest', (error as Error).message);
  }
  return (object) => labels(object.metadata.labels) && fields(object);
}

export function writeOptions(params: URLSearchParams, req: IncomingMessage, warnings: string[]): WriteOptions {
  const validation = params.get('fieldValidation') ?? 'Warn';
  if (!['Strict', 'Warn', 'Ignore'].includes(validation)) throw new ApiError(400, 'BadRequest', `fieldValidation must be one of Ignore, Warn or Strict, got ${validation}`);
  // Without ?fieldManager= the manager is the user agent's program name, as kube-apiserver derives it.
  const agent = (req.headers['user-agent'] ?? 'unknown').split('/')[0];
  return {
    fieldManager: params.get('fieldManager') ?? (req.headers['content-type']?.startsWith('application/apply-patch+yaml') ? undefined : agent),
    fieldValidation: validation as WriteOptions['fieldValidation'],
    dryRun: params.get('dryRun') === 'All',
    force: params.get('force') === 'true',
    warnings,
  };
}

export function deleteOptions(body: Record<string, any> | undefined, params: URLSearchParams): DeleteOptions {
  const policy = body?.propagationPolicy ?? params.get('propagationPolicy') ?? (body?.orphanDependents === true ? 'Orphan' : undefined);
  if (policy !== undefined && !['Background', 'Foreground', 'Orphan'].includes(policy)) throw new ApiError(400, 'BadRequest', `unknown propagationPolicy ${policy}`);
  const dryRun = (body?.dryRun ?? []).includes('All') || params.get('dryRun') === 'All';
  return { preconditions: body?.preconditions, propagationPolicy: policy, dryRun };
}

export function encodeContinue(id: string, offset: number): string {
  return Buffer.from(JSON.stringify({ v: 'fake.v1', id, offset })).toString('base64url');
}

export function decodeContinue(token: string): { id: string; offset: number } | null {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    return decoded?.v === 'fake.v1' && typeof decoded.id === 'string' && Number.isInteger(decoded.offset) ? decoded : null;
  } catch {
    return null;
  }
}

export async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return chunks.length === 0 ? undefined : Buffer.concat(chunks).toString('utf8');
}

export function asJson(text: string | undefined): unknown {
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}

export function send(res: ServerResponse, status: number, body: unknown, warnings: string[], headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  const head: Record<string, string | string[]> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers };
  if (warnings.length > 0) head.warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(status, head);
  res.end(text);
}
