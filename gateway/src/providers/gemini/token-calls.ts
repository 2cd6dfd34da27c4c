// The small HTTP calls that get a Google access token: an OAuth token endpoint's form POST (the
// JWT-bearer grant, the refresh-token grant, STS's token exchange), the metadata server's token GET,
// and IAM Credentials' generateAccessToken (service-account impersonation). Each has a timeout of its
// own; every failure is a ProviderAuthError naming the endpoint and the provider's own reason, and
// never containing the token, the refresh token, the subject token or a key.
import { ProviderAuthError } from '../auth.ts';

export const GOOGLE_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const TOKEN_FETCH_TIMEOUT_MS = 15_000;
/** Google's libraries give a token lifetime of an hour when the answer does not say. */
const DEFAULT_LIFETIME_S = 3600;
/** The most of an answer read: Google's are a few hundred bytes. */
const MAX_ANSWER_CHARS = 64 * 1024;

export interface AccessToken {
  value: string;
  expiresAt: number;
}

export interface CallContext {
  /** Starts each message: `Upstream 'v'`. */
  who: string;
  url: string;
  /** What the endpoint refused, for the message: `the service account a@b`, `the refresh token`. */
  refusedWhat: string;
  now: () => number;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Why a fetch failed without an answer, in words that carry no secret (ECONNREFUSED, TimeoutError). */
export function unreachableReason(error: unknown): string {
  const err = error as Error & { cause?: { code?: unknown; message?: unknown } };
  if (err.name === 'TimeoutError') return 'no answer in time';
  if (typeof err.cause?.code === 'string') return err.cause.code;
  // fetch's own refusals (a bad port) say why in the cause; no secret is in a URL we were given.
  return typeof err.cause?.message === 'string' ? err.cause.message.slice(0, 100) : err.name;
}

function signalOf(context: CallContext): AbortSignal {
  const timeout = AbortSignal.timeout(context.timeoutMs ?? TOKEN_FETCH_TIMEOUT_MS);
  return context.signal ? AbortSignal.any([timeout, context.signal]) : timeout;
}

async function call(context: CallContext, init: RequestInit, endpoint: string): Promise<{ response: Response; body: Record<string, unknown> }> {
  let response: Response;
  try {
    response = await fetch(context.url, { ...init, signal: signalOf(context) });
  } catch (error) {
    throw new ProviderAuthError(`${context.who}: ${endpoint} ${context.url} could not be reached (${unreachableReason(error)}).`);
  }
  const text = (await response.text().catch(() => '')).slice(0, MAX_ANSWER_CHARS);
  let body: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object') body = parsed as Record<string, unknown>;
  } catch {
    // Described by the status.
  }
  return { response, body };
}

function refusal(context: CallContext, endpoint: string, status: number, body: Record<string, unknown>): ProviderAuthError {
  const nested = body.error && typeof body.error === 'object' ? (body.error as Record<string, unknown>) : undefined;
  const parts = nested ? [nested.status, nested.message] : [body.error, body.error_description];
  const reason = parts.filter((part) => typeof part === 'string').join(': ') || `HTTP ${status}`;
  return new ProviderAuthError(`${context.who}: ${endpoint} ${context.url} refused ${context.refusedWhat} (${reason.slice(0, 200)}).`);
}

function lifetimeOf(value: unknown): number {
  return typeof value === 'number' && value > 0 ? value : DEFAULT_LIFETIME_S;
}

/** An OAuth 2 token endpoint (RFC 6749 form POST): `{access_token, expires_in}` back. */
export async function postTokenForm(context: CallContext, form: Record<string, string>, headers: Record<string, string> = {}): Promise<AccessToken> {
  const { response, body } = await call(context, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString() }, 'the token endpoint');
  if (!response.ok || typeof body.access_token !== 'string' || body.access_token === '') throw refusal(context, 'the token endpoint', response.status, body);
  return { value: body.access_token, expiresAt: context.now() + lifetimeOf(body.expires_in) * 1000 };
}

/**
 * The metadata server's token for the instance's (GKE: the Workload Identity's) service account. An
 * answer without `Metadata-Flavor: Google` is not the metadata server (a proxy, a captive portal).
 */
export async function metadataToken(context: CallContext): Promise<AccessToken> {
  const { response, body } = await call(context, { headers: { 'metadata-flavor': 'Google' } }, 'the metadata server');
  if (response.headers.get('metadata-flavor') !== 'Google') {
    throw new ProviderAuthError(`${context.who}: ${context.url} answered HTTP ${response.status} without Metadata-Flavor: Google, so it is not a metadata server.`);
  }
  if (!response.ok || typeof body.access_token !== 'string' || body.access_token === '') throw refusal(context, 'the metadata server', response.status, body);
  return { value: body.access_token, expiresAt: context.now() + lifetimeOf(body.expires_in) * 1000 };
}

/** IAM Credentials' generateAccessToken, authorised by `bearer`: the impersonated account's token. */
export async function impersonate(context: CallContext, bearer: string, lifetimeSeconds: number): Promise<AccessToken> {
  const { response, body } = await call(
    context,
    { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` }, body: JSON.stringify({ scope: [GOOGLE_SCOPE], lifetime: `${lifetimeSeconds}s` }) },
    'service-account impersonation at',
  );
  const expiresAt = typeof body.expireTime === 'string' ? Date.parse(body.expireTime) : NaN;
  if (!response.ok || typeof body.accessToken !== 'string' || body.accessToken === '' || Number.isNaN(expiresAt)) throw refusal(context, 'service-account impersonation at', response.status, body);
  return { value: body.accessToken, expiresAt };
}
