// A top-level member of a large JSON body that the main thread does not hold: the parser worker
// (json-parser-pool.ts) parsed it, and the body's bytes are forwarded as they are, so only what the
// gateway itself needs from the member comes back, computed in the worker: its token estimate
// (limits/estimate.ts) and the ids it references (body-references.ts). service-test, which reads
// whole requests, gets the members through readWholeJson (http/body.ts) instead.
import type { RoutedKind } from '../storage/routed-ids.ts';

export interface Reference {
  /** Where the id sits, as OpenAI names a nested parameter (`messages[0].content[1].file.file_id`). */
  param: string;
  id: string;
  kind: RoutedKind;
}

export class DeferredJson {
  /** The member's key, and the size of its JSON text in bytes. */
  readonly key: string;
  readonly bytes: number;
  /** limits/estimate.ts's input estimate of the member's value. */
  readonly estimatedTokens: number;
  /** Every id the member references (body-references.ts). */
  readonly references: readonly Reference[];

  constructor(key: string, bytes: number, estimatedTokens: number, references: readonly Reference[]) {
    this.key = key;
    this.bytes = bytes;
    this.estimatedTokens = estimatedTokens;
    this.references = references;
  }

  /** Never serialised by mistake as `{}`: a body with deferred members is forwarded as its bytes. */
  toJSON(): never {
    throw new Error(`the body member '${this.key}' was left in the parser worker and cannot be serialised on the main thread`);
  }
}
