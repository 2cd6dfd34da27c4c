// What middleware leaves on ctx.state for the routes and the access log.
import type { Account, ApiKey, Plan } from '@tollgate/crds';
import type { RequestLimits } from '../limits/request-limits.ts';
import type { BodyPolicy } from './body-policy.ts';
import type { Drain } from './drain.ts';
import type { Catalogue, Snapshot } from '../resources/snapshot.ts';

export interface Principal {
  key: ApiKey;
  account: Account;
  plan: Plan | null;
  catalogue: Catalogue;
  /** The snapshot this request authenticated against; the rest of the request uses the same one. */
  snapshot: Snapshot;
}

export interface GatewayState {
  requestId: string;
  /** The X-Service-Request-Id a client that is not a trusted proxy sent, sanitised: logged, never used as the id. */
  clientRequestId?: string;
  /** How bodies are read (idle timeout, shared memory budget): set for every request by the envelope. */
  bodyPolicy?: BodyPolicy;
  /** Graceful shutdown's registry: streams register here to be ended with an error event at the deadline. */
  drain?: Drain;
  principal?: Principal;
  /** Filled by routes once the body is read, for the access log. */
  model?: string;
  /** Which upstream answered, and every attempt made (for the access log). */
  upstream?: { target?: string; attempts: Array<{ upstream: string; status?: number; error?: string; ms: number }> };
  /** Tokens used, as reported by the upstream (or counted by service-test). */
  usage?: { inputTokens: number; outputTokens: number };
  /** The plan limits holding this request, when its account or key has any; routes reserve tokens through it. */
  limits?: RequestLimits;
  /** Set when a stream that had started ended with an in-band error. */
  streamError?: string;
}
