// Workload identity federation (an ADC file of type external_account): a subject token from another
// identity provider (a Kubernetes service-account token on another cloud, a CI job's OIDC token) read
// from a file or fetched from a URL, exchanged at Google's STS (`token_url`, RFC 8693) for a federated
// access token, and that exchanged once more for a service account's token when the file names
// `service_account_impersonation_url`. Executable-sourced, AWS-sourced and certificate-sourced
// subject tokens are refused with a message saying so.
import { readFile } from 'node:fs/promises';
import { ProviderAuthError } from '../auth.ts';
import { GOOGLE_SCOPE, impersonate, postTokenForm, unreachableReason, type AccessToken } from './token-calls.ts';

const SUBJECT_TOKEN_TIMEOUT_MS = 10_000;
const MAX_SUBJECT_TOKEN_CHARS = 64 * 1024;

interface CredentialSource {
  file?: unknown;
  url?: unknown;
  headers?: unknown;
  format?: { type?: unknown; subject_token_field_name?: unknown };
}

function field(json: Record<string, unknown>, name: string, who: string): string {
  const value = json[name];
  if (typeof value !== 'string' || value === '') throw new ProviderAuthError(`${who}: an external_account needs ${name}.`);
  return value;
}

/** The subject token as the format says: the text itself, or a field of a JSON object. */
function subjectFrom(text: string, source: CredentialSource, who: string, where: string): string {
  if (source.format?.type !== 'json') return text.trim();
  const name = source.format.subject_token_field_name;
  let value: unknown;
  try {
    value = typeof name === 'string' ? (JSON.parse(text) as Record<string, unknown>)[name] : undefined;
  } catch {
    value = undefined;
  }
  if (typeof value !== 'string' || value === '') throw new ProviderAuthError(`${who}: ${where} holds no JSON field ${JSON.stringify(name)} with the subject token.`);
  return value;
}

async function subjectToken(source: CredentialSource, who: string): Promise<string> {
  if (typeof source.file === 'string') {
    const file = source.file;
    const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new ProviderAuthError(`${who}: the subject token file ${file} cannot be read (${error.code ?? error.name}).`);
    });
    return subjectFrom(text.slice(0, MAX_SUBJECT_TOKEN_CHARS), source, who, `the subject token file ${file}`);
  }
  if (typeof source.url === 'string') {
    const headers = source.headers && typeof source.headers === 'object' ? (source.headers as Record<string, string>) : {};
    let response: Response;
    try {
      response = await fetch(source.url, { headers, signal: AbortSignal.timeout(SUBJECT_TOKEN_TIMEOUT_MS) });
    } catch (error) {
      throw new ProviderAuthError(`${who}: the subject token URL ${source.url} could not be reached (${unreachableReason(error)}).`);
    }
    const text = (await response.text().catch(() => '')).slice(0, MAX_SUBJECT_TOKEN_CHARS);
    if (!response.ok) throw new ProviderAuthError(`${who}: the subject token URL ${source.url} answered HTTP ${response.status}.`);
    return subjectFrom(text, source, who, `the answer of ${source.url}`);
  }
  const kind = Object.keys(source).find((key) => key !== 'format' && key !== 'headers') ?? 'none';
  throw new ProviderAuthError(`${who}: an external_account's credential_source must be a file or a url (${kind} is not supported by the gateway).`);
}

export async function externalAccountToken(who: string, json: Record<string, unknown>, now: () => number): Promise<AccessToken> {
  const audience = field(json, 'audience', who);
  const subjectTokenType = field(json, 'subject_token_type', who);
  const tokenUrl = field(json, 'token_url', who);
  const source = json.credential_source;
  if (!source || typeof source !== 'object') throw new ProviderAuthError(`${who}: an external_account needs credential_source.`);
  const subject = await subjectToken(source as CredentialSource, who);
  const form: Record<string, string> = {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    audience,
    scope: GOOGLE_SCOPE,
    requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    subject_token: subject,
    subject_token_type: subjectTokenType,
  };
  const headers: Record<string, string> = {};
  if (typeof json.client_id === 'string' && typeof json.client_secret === 'string') {
    headers.authorization = `Basic ${Buffer.from(`${json.client_id}:${json.client_secret}`).toString('base64')}`;
  } else if (typeof json.workforce_pool_user_project === 'string') {
    form.options = JSON.stringify({ userProject: json.workforce_pool_user_project });
  }
  const federated = await postTokenForm({ who, url: tokenUrl, refusedWhat: `the subject token for ${audience}`, now }, form, headers);
  const impersonation = json.service_account_impersonation_url;
  if (typeof impersonation !== 'string') return federated;
  const lifetime = (json.service_account_impersonation as { token_lifetime_seconds?: unknown } | undefined)?.token_lifetime_seconds;
  return impersonate({ who, url: impersonation, refusedWhat: 'the federated token', now }, federated.value, typeof lifetime === 'number' && lifetime > 0 ? lifetime : 3600);
}
