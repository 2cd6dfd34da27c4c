// SigV4 for Bedrock, with AWS's own signer (@smithy/signature-v4). The credential scope's service is
// `bedrock` (not `bedrock-runtime`), the canonical URI is the wire path encoded once more (a model
// id's `:` is `%3A` on the wire and `%253A` in the canonical request: the signer's uriEscapePath),
// and the signature covers the exact body bytes sent. Only host, content-type, x-amz-date and
// x-amz-security-token are signed: client or proxy headers added later must not break the signature.
// Credentials: the Upstream's bedrock.accessKeyId/secretAccessKey/sessionToken when set, else the
// standard AWS chain (env, SSO, shared files, web identity, ECS/EC2 roles) of
// @aws-sdk/credential-provider-node, which caches what it finds and refreshes it before it expires.
import { Sha256 } from '@aws-crypto/sha256-js';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { CredentialRef, Upstream } from '@tollgate/crds';
import { SignatureV4 } from '@smithy/signature-v4';
import { ProviderAuthError, type AuthTarget, type ProviderAuth, type ReadCredential, type RefusedAnswer } from '../auth.ts';
import { sessionExpired } from './errors.ts';
import type { ProviderRequest } from '../provider.ts';

interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

type ChainProvider = ReturnType<typeof defaultProvider>;

function describe(ref: CredentialRef): string {
  return 'env' in ref ? `environment variable ${ref.env}` : `Secret ${ref.secretRef.name} key ${ref.secretRef.key}`;
}

function readRequired(upstream: Upstream, field: 'accessKeyId' | 'secretAccessKey', read: ReadCredential): string {
  const ref = upstream.spec.bedrock?.[field] as CredentialRef;
  const value = read(ref);
  if (!value) throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': bedrock.${field} is not set (${describe(ref)} is empty or missing).`);
  return value;
}

/** The Upstream's own keys, or null when it names none (the AWS chain then applies). */
function staticCredentials(upstream: Upstream, read: ReadCredential): AwsCredentials | null {
  const bedrock = upstream.spec.bedrock;
  if (!bedrock?.accessKeyId || !bedrock.secretAccessKey) return null;
  const credentials: AwsCredentials = { accessKeyId: readRequired(upstream, 'accessKeyId', read), secretAccessKey: readRequired(upstream, 'secretAccessKey', read) };
  if (bedrock.sessionToken) {
    const token = read(bedrock.sessionToken);
    if (!token) throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': bedrock.sessionToken is not set (${describe(bedrock.sessionToken)} is empty or missing).`);
    credentials.sessionToken = token;
  }
  return credentials;
}

export class BedrockAuth implements ProviderAuth {
  #chain: ChainProvider | null = null;
  #forceRefresh = false;
  readonly #makeChain: () => ChainProvider;

  constructor(makeChain: () => ChainProvider = () => defaultProvider()) {
    this.#makeChain = makeChain;
  }

  async authorize(request: ProviderRequest, target: AuthTarget, read: ReadCredential, signal: AbortSignal): Promise<Record<string, string>> {
    const upstream = target.upstream;
    const credentials = staticCredentials(upstream, read) ?? (await this.fromChain(upstream, signal));
    const signer = new SignatureV4({ service: 'bedrock', region: upstream.spec.bedrock?.region ?? 'us-east-1', credentials, sha256: Sha256, uriEscapePath: true });
    const query = Object.fromEntries(target.url.searchParams);
    const headers: Record<string, string> = { host: target.url.host };
    if (request.headers['content-type']) headers['content-type'] = request.headers['content-type'];
    const signed = await signer.sign({
      method: request.method,
      protocol: target.url.protocol,
      hostname: target.url.hostname,
      port: target.url.port ? Number(target.url.port) : undefined,
      path: target.url.pathname,
      query,
      headers,
      body: request.method === 'GET' ? undefined : request.body,
    });
    const out: Record<string, string> = {};
    for (const name of ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256']) {
      const value = signed.headers[name];
      if (typeof value === 'string') out[name] = value;
    }
    return out;
  }

  /**
   * Bedrock refuses expired chain credentials with 403 (ExpiredTokenException, or
   * UnrecognizedClientException once a session token is replaced): fetch them afresh for the one
   * retry. The Upstream's own keys are read anew on every request anyway, and other refusals (a
   * missing IAM permission) no fresh credential mends.
   */
  refused(upstream: Upstream, status: number, answer: RefusedAnswer): boolean {
    if (upstream.spec.bedrock?.accessKeyId) return false;
    if ((status !== 401 && status !== 403) || !sessionExpired(answer.headers, answer.text)) return false;
    this.#forceRefresh = true;
    return true;
  }

  secrets(upstream: Upstream, read: ReadCredential): string[] {
    const bedrock = upstream.spec.bedrock;
    const refs = [bedrock?.secretAccessKey, bedrock?.sessionToken].filter((ref): ref is CredentialRef => ref !== undefined);
    return refs.map((ref) => read(ref)).filter((value): value is string => typeof value === 'string' && value !== '');
  }

  private async fromChain(upstream: Upstream, signal: AbortSignal): Promise<AwsCredentials> {
    this.#chain ??= this.#makeChain();
    // Every request signed until a forced fetch has succeeded forces one (the chain runs one at a
    // time for all of them): a request that started before the refusal must not use up the flag.
    const forceRefresh = this.#forceRefresh;
    signal.throwIfAborted();
    try {
      const found = await this.#chain({ forceRefresh });
      if (forceRefresh) this.#forceRefresh = false;
      return { accessKeyId: found.accessKeyId, secretAccessKey: found.secretAccessKey, sessionToken: found.sessionToken };
    } catch (err) {
      // The chain's messages name the sources it tried, never a secret.
      throw new ProviderAuthError(
        `Upstream '${upstream.metadata.name}': no bedrock.accessKeyId/secretAccessKey set and the AWS credential chain found no credentials (${(err as Error).message}).`,
      );
    }
  }
}
