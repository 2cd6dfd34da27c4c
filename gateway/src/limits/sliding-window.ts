// A sliding window over the last minute, kept as a short log of (slot, amount) entries. A fixed
// window lets 2× the limit through around its boundary; a token bucket with a full-minute burst does
// too (a full burst, then a minute of refill). Here every amount is counted for at least a whole
// window and at most one slot longer, so no 60-second span ever holds more than the limit.
// Memory follows activity: one entry per busy 100 ms slot, none for an idle account.

export const WINDOW_MS = 60_000;
export const SLOT_MS = 100;
const SLOTS_PER_WINDOW = WINDOW_MS / SLOT_MS;

/** Where an amount was recorded, so it can be settled (corrected) later. */
export type SlotRef = number;

export class SlidingWindow {
  #slots: number[] = [];
  #amounts: number[] = [];
  #head = 0;
  #total = 0;

  /** The amount counted in the window at `now`. */
  used(now: number): number {
    this.#expire(now);
    return this.#total;
  }

  get empty(): boolean {
    return this.#head === this.#slots.length;
  }

  add(amount: number, now: number): SlotRef {
    this.#expire(now);
    const last = this.#slots.length - 1;
    // A clock that steps back (or a caller with an older timestamp) joins the newest slot: counted
    // a little longer, never shorter, and the log stays in order.
    const slot = last >= this.#head ? Math.max(Math.floor(now / SLOT_MS), this.#slots[last]) : Math.floor(now / SLOT_MS);
    if (last >= this.#head && this.#slots[last] === slot) this.#amounts[last] += amount;
    else {
      this.#slots.push(slot);
      this.#amounts.push(amount);
    }
    this.#total += amount;
    return slot;
  }

  /** Corrects an earlier amount (settlement). Nothing to do once its slot has left the window. */
  adjust(ref: SlotRef, delta: number, now: number): void {
    this.#expire(now);
    for (let i = this.#slots.length - 1; i >= this.#head; i--) {
      if (this.#slots[i] !== ref) continue;
      // Never below zero: a refund cannot free more than the slot holds.
      const applied = Math.max(delta, -this.#amounts[i]);
      this.#amounts[i] += applied;
      this.#total += applied;
      return;
    }
  }

  /** Milliseconds until `amount` more fits under `limit` (0 when it fits now). */
  waitFor(amount: number, limit: number, now: number): number {
    this.#expire(now);
    let excess = this.#total + amount - limit;
    if (excess <= 0) return 0;
    for (let i = this.#head; i < this.#slots.length; i++) {
      excess -= this.#amounts[i];
      if (excess <= 0) return expiryOf(this.#slots[i]) - now;
    }
    return WINDOW_MS;
  }

  /** Milliseconds until everything counted now has left the window (OpenAI's "reset"). */
  resetIn(now: number): number {
    this.#expire(now);
    return this.empty ? 0 : expiryOf(this.#slots[this.#slots.length - 1]) - now;
  }

  #expire(now: number): void {
    // An entry of slot s counts while the current slot is at most s + SLOTS_PER_WINDOW, i.e. until
    // (s + SLOTS_PER_WINDOW + 1) × SLOT_MS: always more than a full window after the amount arrived.
    const oldestLive = Math.floor(now / SLOT_MS) - SLOTS_PER_WINDOW;
    while (this.#head < this.#slots.length && this.#slots[this.#head] < oldestLive) {
      this.#total -= this.#amounts[this.#head];
      this.#head++;
    }
    if (this.#head === this.#slots.length) {
      this.#slots.length = this.#amounts.length = this.#head = 0;
      this.#total = 0;
    } else if (this.#head > 64 && this.#head * 2 > this.#slots.length) {
      this.#slots.splice(0, this.#head);
      this.#amounts.splice(0, this.#head);
      this.#head = 0;
    }
  }
}

function expiryOf(slot: number): number {
  return (slot + SLOTS_PER_WINDOW + 1) * SLOT_MS;
}
