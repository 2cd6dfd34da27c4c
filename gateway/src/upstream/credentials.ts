// Upstream credentials. In file mode `credentials.env` names an environment variable of the gateway
// process; in Kubernetes `secretRef` names a Secret key, fed in by the Kubernetes source. The value
// goes into one request header and nowhere else: never a log line, an error or a response.
import type { CredentialRef, Upstream } from '@tollgate/crds';

export type SecretLookup = (name: string, key: string) => string | undefined;

export class Credentials {
  #env: NodeJS.ProcessEnv;
  #secrets: SecretLookup;
  /**
   * `credentials.env` values, read once per Upstream object: reading process.env is a call into C++
   * (0.8% of a chat request). A changed Upstream is a new object in a new snapshot, so editing the
   * manifest reads the variable again; the process environment itself does not change at run time.
   * Secrets are not cached: a rotated Secret changes no Upstream and must apply to the next request.
   */
  #fromEnv = new WeakMap<Upstream, string>();

  constructor(env: NodeJS.ProcessEnv = process.env, secrets: SecretLookup = () => undefined) {
    this.#env = env;
    this.#secrets = secrets;
  }

  /** The API key for the upstream, null when it has none configured, undefined when it is missing. */
  for(upstream: Upstream): string | null | undefined {
    const credentials = upstream.spec.credentials;
    if (!credentials) return null;
    return this.#read(upstream, credentials);
  }

  /** Any credential reference (a translated provider's key, Bedrock's access key), undefined when not set. */
  read(ref: CredentialRef): string | undefined {
    if ('env' in ref) return this.#env[ref.env] || undefined;
    return this.#secrets(ref.secretRef.name, ref.secretRef.key);
  }

  #read(upstream: Upstream, credentials: CredentialRef): string | undefined {
    if ('env' in credentials) {
      const cached = this.#fromEnv.get(upstream);
      if (cached !== undefined) return cached;
      // A missing variable is not remembered: the error path may read it again.
      const value = this.#env[credentials.env] || undefined;
      if (value !== undefined) this.#fromEnv.set(upstream, value);
      return value;
    }
    return this.#secrets(credentials.secretRef.name, credentials.secretRef.key);
  }
}
