// Upstream API keys from Secrets (Upstream.spec.credentials.secretRef {name, key}). The gateway lists
// and watches the Secrets of its namespace, but keeps the data of only those an Upstream references:
// every other Secret (the operator's key Secrets, Helm release records, tokens) is reduced to its name
// and resourceVersion on arrival. When an Upstream starts referencing a Secret that was held without
// its data, the Secrets are listed again to fetch it. Values are decoded per lookup, so a rotated
// Secret is used by the next request, and they never reach a log line.
import type { KubeObject } from '@tollgate/kube';

export interface SecretObject extends KubeObject {
  data?: Record<string, string> | null;
}

export class SecretIndex {
  #referenced = new Set<string>();
  #secrets: Map<string, KubeObject> = new Map();

  /** The map the Secret reflector keeps, read at lookup time. */
  attach(secrets: Map<string, KubeObject>): void {
    this.#secrets = secrets;
  }

  /** Reflector transform: a referenced Secret keeps its data, any other keeps nothing but its name. */
  readonly keep = (secret: SecretObject): KubeObject => {
    const name = secret.metadata?.name;
    const metadata = { name, resourceVersion: secret.metadata?.resourceVersion };
    return name && this.#referenced.has(name) ? { metadata, data: { ...(secret.data ?? {}) } } : { metadata };
  };

  /**
   * Sets the Secret names that Upstreams reference. Returns true when a newly referenced Secret is
   * held without its data, so the caller relists the Secrets to fetch it.
   */
  reference(names: ReadonlySet<string>): boolean {
    let missingData = false;
    for (const [name, secret] of this.#secrets) {
      if (names.has(name) && !this.#referenced.has(name) && !('data' in secret)) missingData = true;
      // No longer referenced: forget its data now rather than at the next event.
      if (!names.has(name) && 'data' in secret) this.#secrets.set(name, { metadata: secret.metadata });
    }
    this.#referenced = new Set(names);
    return missingData;
  }

  /** The decoded value, or undefined when the Secret or the key does not exist (or is empty). */
  lookup = (name: string, key: string): string | undefined => {
    const encoded = (this.#secrets.get(name) as SecretObject | undefined)?.data?.[key];
    if (!encoded) return undefined;
    // Trimmed: files made with `echo` end in a newline, which no header value may contain.
    const value = Buffer.from(encoded, 'base64').toString('utf8').trim();
    return value || undefined;
  };
}

type MaybeRef = { secretRef?: { name?: unknown } } | undefined;

/**
 * The Secret names that Upstream objects reference, read from the raw objects (valid or not): the API
 * key (`credentials`) and Bedrock's access keys (`bedrock.accessKeyId`, `secretAccessKey`, `sessionToken`).
 */
export function referencedSecrets(upstreams: Iterable<KubeObject>): Set<string> {
  const names = new Set<string>();
  for (const upstream of upstreams) {
    const spec = upstream.spec as { credentials?: MaybeRef; bedrock?: Record<string, MaybeRef> } | undefined;
    const refs: MaybeRef[] = [spec?.credentials, spec?.bedrock?.accessKeyId, spec?.bedrock?.secretAccessKey, spec?.bedrock?.sessionToken];
    for (const ref of refs) if (typeof ref?.secretRef?.name === 'string') names.add(ref.secretRef.name);
  }
  return names;
}
