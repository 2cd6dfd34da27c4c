// The requests in flight (the open exchanges, exchanges.ts), kept as a doubly linked list rather than
// in a Set or a Map. Many entries pass through such a collection, and V8 then moves it into a new
// hash table every few dozen requests; the table left behind keeps its entries and a pointer to the
// new one. Once one of those left tables has outlived the young generation, it keeps every later
// table, and every request in them, alive through each young collection until the next full one, and
// the finished requests are promoted (measured with bench/gc-compare.ts: docs/adr/0025). A link taken
// out forgets both neighbours, so nothing that has finished points at anything later.
export interface Link<T> {
  readonly value: T;
  prev: Link<T> | null;
  next: Link<T> | null;
}

export class OpenList<T> {
  #head: Link<T> | null = null;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(value: T): Link<T> {
    const link: Link<T> = { value, prev: null, next: this.#head };
    if (this.#head) this.#head.prev = link;
    this.#head = link;
    this.#size++;
    return link;
  }

  /** Takes a link out; a link already taken out is left alone. */
  remove(link: Link<T>): void {
    if (link.prev) link.prev.next = link.next;
    else if (this.#head === link) this.#head = link.next;
    else return;
    if (link.next) link.next.prev = link.prev;
    link.prev = null;
    link.next = null;
    this.#size--;
  }

  /** The values in the list now (a copy: the caller may take links out while it goes through them). */
  values(): T[] {
    const values: T[] = [];
    for (let link = this.#head; link; link = link.next) values.push(link.value);
    return values;
  }
}
