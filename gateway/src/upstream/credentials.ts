// Upstream credentials. In file mode `credentials.env` names an environment variable of the gateway
// process; in Kubernetes `secretRef` names a Secret key, fed in by the Kubernetes source. The value
// goes into one request header and nowhere else: never a log line, an error or a response.
import type { Upstream } from '@tollgate/crds';

export type SecretLookup = (name: string, key: string) => string | undefined;

export class Credentials {
  #env: NodeJS.ProcessEnv;
  #secrets: SecretLookup;

  constructor(env: NodeJS.ProcessEnv = process.env, secrets: SecretLookup = () => undefined) {
    this.#env = env;
    this.#secrets = secrets;
  }

  /** The API key for the upstream, null when it has none configured, undefined when it is missing. */
  for(upstream: Upstream): string | null | undefined {
    const credentials = upstream.spec.credentials;
    if (!credentials) return null;
    if ('env' in credentials) return this.#env[credentials.env] || undefined;
    return this.#secrets(credentials.secretRef.name, credentials.secretRef.key);
  }
}
