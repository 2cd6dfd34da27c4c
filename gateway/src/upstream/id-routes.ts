// Ids issued by an upstream (resp_…, file-…, batch_…) mean something only to that upstream, so the
// gateway remembers which upstream issued each one, per account, bounded in size (oldest dropped).
export interface IdRoute {
  upstream: string;
  model: string;
}

export class IdRoutes {
  #routes = new Map<string, IdRoute>();
  #max: number;

  constructor(max = 100_000) {
    this.#max = max;
  }

  remember(account: string, id: string, route: IdRoute): void {
    const key = `${account}\u0000${id}`;
    this.#routes.delete(key);
    this.#routes.set(key, route);
    if (this.#routes.size > this.#max) this.#routes.delete(this.#routes.keys().next().value!);
  }

  lookup(account: string, id: string): IdRoute | undefined {
    return this.#routes.get(`${account}\u0000${id}`);
  }

  forget(account: string, id: string): void {
    this.#routes.delete(`${account}\u0000${id}`);
  }
}
