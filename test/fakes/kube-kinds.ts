// The kinds the fake Kubernetes API server serves at a moment: the built-in ones, always, and those
// each established CustomResourceDefinition registers (kube-crds.ts) until it is deleted. A kind a
// CRD update keeps is updated in place, so open watches, which hold it, keep receiving its events.
import type { ResourceType } from './kube-resources.ts';

const sameKind = (a: ResourceType, b: ResourceType) => a.group === b.group && a.version === b.version && a.plural === b.plural;

export class KindRegistry {
  #builtin: readonly ResourceType[];
  /** The kinds each CustomResourceDefinition (by name) registered. */
  #defined = new Map<string, ResourceType[]>();
  #types: readonly ResourceType[];

  constructor(builtin: readonly ResourceType[]) {
    this.#builtin = builtin;
    this.#types = builtin;
  }

  /** Every kind served now: the built-ins, then those of established CRDs. */
  get types(): readonly ResourceType[] {
    return this.#types;
  }

  /** Registers the kinds of a CRD; returns those it no longer defines. */
  define(definer: string, types: ResourceType[]): ResourceType[] {
    const before = this.#defined.get(definer) ?? [];
    const next = types.map((type) => {
      const existing = before.find((old) => sameKind(old, type));
      return existing ? Object.assign(existing, type) : type;
    });
    this.#defined.set(definer, next);
    this.#rebuild();
    return before.filter((old) => !next.includes(old));
  }

  /** Unregisters every kind of a CRD (deleted); returns them. */
  undefine(definer: string): ResourceType[] {
    const removed = this.#defined.get(definer) ?? [];
    this.#defined.delete(definer);
    this.#rebuild();
    return removed;
  }

  definedBy(definer: string): ResourceType[] {
    return this.#defined.get(definer) ?? [];
  }

  definerOf(type: ResourceType): string | undefined {
    for (const [definer, types] of this.#defined) if (types.includes(type)) return definer;
    return undefined;
  }

  #rebuild(): void {
    this.#types = [...this.#builtin, ...[...this.#defined.values()].flat()];
  }
}
