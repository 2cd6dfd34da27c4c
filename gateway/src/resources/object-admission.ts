// Which Kubernetes objects may serve. Each object is validated on its own with the validator the file
// source and `tollgate validate` use (@tollgate/crds), because the API server's CRD schema is not the
// gateway's: CRDs are not upgraded by `helm upgrade`, so objects written under an older or looser
// schema reach the gateway. Policy (docs/adr/0006-kubernetes-source.md): an invalid object is refused
// with one log line per resourceVersion (kind/name, field, reason); if an earlier version of it was
// valid, that last good version keeps serving; a new object that was never valid is not served; every
// other object applies. A deletion always applies. Last good versions live in memory, so after a
// restart only currently valid objects serve.
import { API_VERSION, validateManifest, type AnyResource, type Kind } from '@tollgate/crds';
import type { Logger } from 'pino';
import type { KubeObject } from '@tollgate/kube';

export interface Admitted {
  resources: AnyResource[];
  /** One line per refused object, for the source's status. */
  refusals: string[];
}

export class ObjectAdmission {
  #lastGood = new Map<string, AnyResource>();
  /** id → the resourceVersion whose refusal was already logged. */
  #reported = new Map<string, string>();
  #log: Logger;

  /** `log` carries the namespace in its bindings. */
  constructor(log: Logger) {
    this.#log = log;
  }

  admit(objects: ReadonlyMap<Kind, Iterable<KubeObject>>): Admitted {
    const resources: AnyResource[] = [];
    const refusals: string[] = [];
    const present = new Set<string>();
    for (const [kind, items] of objects) {
      for (const object of items) {
        const name = object.metadata?.name ?? '';
        const id = `${kind}/${name}`;
        present.add(id);
        // CR lists and watches carry apiVersion and kind; fill them in anyway, since the collection says them.
        const result = validateManifest({ ...object, apiVersion: object.apiVersion ?? API_VERSION, kind: object.kind ?? kind });
        if (result.ok) {
          this.#lastGood.set(id, result.resource);
          this.#reported.delete(id);
          resources.push(result.resource);
          continue;
        }
        const previous = this.#lastGood.get(id);
        if (previous) resources.push(previous);
        const resourceVersion = object.metadata?.resourceVersion ?? '';
        const reason = result.problems.map((p) => `${p.field} ${p.message}`).join('; ');
        const consequence = previous ? `its last good version (resourceVersion ${previous.metadata.resourceVersion}) keeps serving` : 'it is not served';
        refusals.push(`${kind} ${name} (resourceVersion ${resourceVersion}): ${reason}; ${consequence}`);
        if (this.#reported.get(id) === resourceVersion) continue;
        this.#reported.set(id, resourceVersion);
        for (const problem of result.problems) {
          this.#log.error(
            { kind, name, resourceVersion, field: problem.field, reason: problem.message },
            `Kubernetes object refused: ${kind} ${name}: ${problem.field} ${problem.message}; ${consequence}`,
          );
        }
      }
    }
    // Deleted objects stop serving, whatever their last good version was.
    for (const id of this.#lastGood.keys()) if (!present.has(id)) this.#lastGood.delete(id);
    for (const id of this.#reported.keys()) if (!present.has(id)) this.#reported.delete(id);
    return { resources, refusals };
  }
}
