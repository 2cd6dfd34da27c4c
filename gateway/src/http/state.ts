// What middleware leaves on ctx.state for the routes and the access log.
import type { Account, ApiKey, Plan } from '@tollgate/crds';
import type { RequestLimits } from '../limits/request-limits.ts';
import type { Catalogue, Snapshot } from '../resources/snapshot.ts';
import type { AttemptRecord } from '../telemetry/request-record.ts';
import type { RequestTelemetry } from '../telemetry/request-telemetry.ts';

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
  principal?: Principal;
  /** Filled by routes once the body is read, for the access log. */
  model?: string;
  /** Which upstream answered, and every attempt made (for the access log). */
  upstream?: { target?: string; attempts: AttemptRecord[] };
  /** Tokens used, as reported by the upstream (or counted by service-test). */
  usage?: { inputTokens: number; outputTokens: number };
  /** The plan limits holding this request, when its account or key has any; routes reserve tokens through it. */
  limits?: RequestLimits;
  /** Set when a stream that had started ended with an in-band error. */
  streamError?: string;
  /** The error answered, for metrics: its code and, where the refusing code names one, which check refused. */
  error?: { code: string; reason?: string };
  /** Metrics and spans of this request (telemetry/request-telemetry.ts). */
  telemetry: RequestTelemetry;
}
