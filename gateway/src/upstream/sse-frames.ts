// Event-stream bytes passed through as they came, frame by frame, without decoding them. Only a frame
// that contains one of a few needles (`"usage"`, say) is handed to `inspect`, which may keep it, drop
// it or replace it; every other byte leaves exactly as it arrived. A frame is everything up to and
// including the run of line breaks that holds its blank line; lines end in \n, \r\n or \r (the SSE
// spec), and a frame may arrive split over any number of reads. What one read completes goes out as
// one Buffer: a frame still incomplete at the end of a read is held until its blank line arrives
// (clients cannot use half a frame anyway). With a cap on the size of one frame (the relay's case), a
// frame past it is an error and none of it is sent; without one, past 1 MB it is forwarded as it
// comes (see MAX_HELD). So
// the output is whole frames and an in-band error event written after it starts a frame of its own.

const LF = 0x0a;
const CR = 0x0d;

/**
 * Without a cap, frames larger than this are not held back whole: they are forwarded as they arrive, and inspected
 * when they end only to read them (a Responses `response.completed` carries the whole answer and its
 * usage); what inspect returns cannot apply to bytes already sent. Past MAX_INSPECTED not even that.
 */
const MAX_HELD = 1024 * 1024;
const MAX_INSPECTED = 64 * 1024 * 1024;

export interface FrameFilter {
  /** The needles a frame must contain to be inspected; read once per upstream read (it may change as the stream goes). */
  needles(): readonly Buffer[];
  /** Undefined keeps the frame as it came, null drops it, a Buffer replaces it. */
  inspect(frame: Buffer): Buffer | null | undefined;
}

/** An upstream event larger than the stream's cap: the relay ends the stream with an error event instead. */
export class EventTooLarge extends Error {
  readonly code = 'upstream_event_too_large';
  constructor(limit: number) {
    super(`An upstream event was larger than ${limit} bytes.`);
  }
}

/** The line state before a byte: is the current line empty so far, and was the last byte a CR (so that an LF continues its terminator)? */
export interface LineState {
  lineEmpty: boolean;
  afterCR: boolean;
}

const MID_LINE: LineState = { lineEmpty: false, afterCR: false };

export class SseFrames {
  #filter: FrameFilter;
  /** Bytes of the current frame, held until its blank line arrives. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** The current frame outgrew MAX_HELD: its bytes are forwarded as they come until it ends. */
  #passing = false;
  /** ... and kept for reading when it ends (null: too large even for that). */
  #passed: Buffer[] | null = null;
  #passedBytes = 0;
  #line: LineState = { lineEmpty: true, afterCR: false };
  /** The last read ended just after a whole frame: line breaks that start the next one still belong to it. */
  #lastEndedFrame = false;
  /** The last frame was dropped (so are those line breaks). */
  #lastDropped = false;

  /** A frame larger than this is an error (EventTooLarge) and none of it is sent; it is held whole until then. */
  #maxFrame: number;

  constructor(filter: FrameFilter, maxFrameBytes = Infinity) {
    this.#filter = filter;
    this.#maxFrame = maxFrameBytes;
  }

  /** The bytes to send for one read (null: nothing yet). */
  feed(chunk: Buffer): Buffer | null {
    if (chunk.length === 0) return null;
    const out: Buffer[] = [];
    if (this.#lastEndedFrame && isBreak(chunk[0])) {
      // Line breaks that start a read continue the run that ended the last frame (the LF of a CRLF,
      // more blank lines): they go where that frame went.
      let breaks = 1;
      while (breaks < chunk.length && isBreak(chunk[breaks])) breaks++;
      if (!this.#lastDropped) out.push(chunk.subarray(0, breaks));
      this.#line = { lineEmpty: true, afterCR: chunk[breaks - 1] === CR };
      if (breaks === chunk.length) return join(out);
      chunk = chunk.subarray(breaks);
    }
    this.#lastEndedFrame = false;
    const before = this.#line;
    const last = chunk[chunk.length - 1];
    this.#line = { lineEmpty: last === LF || last === CR, afterCR: last === CR };

    const end = lastFrameEnd(chunk, before);
    if (end === -1) {
      if (this.#passing) this.#pass(chunk, out);
      else this.#hold(chunk, out);
      return join(out);
    }
    let head = end === chunk.length ? chunk : chunk.subarray(0, end);
    let state = before;
    if (this.#passing || this.#heldBytes > 0) {
      // The first boundary completes the frame that earlier reads began.
      const first = firstFrameEnd(head, before);
      if (this.#heldBytes + first > this.#maxFrame) throw new EventTooLarge(this.#maxFrame);
      const rest = head.subarray(0, first);
      if (this.#passing) this.#endPassing(rest, out);
      else this.#emit(this.#heldBytes > 0 ? Buffer.concat([...this.#held, rest]) : rest, out, this.#filter.needles());
      this.#held = [];
      this.#heldBytes = 0;
      head = head.subarray(first);
      state = MID_LINE;
    }
    if (head.length > 0) this.#scan(head, state, out);
    if (end < chunk.length) this.#hold(chunk.subarray(end), out);
    else this.#lastEndedFrame = true;
    return join(out);
  }

  /** At the end of the stream: a last frame without its blank line is completed (as a parser would dispatch it). */
  end(): Buffer | null {
    const out: Buffer[] = [];
    if (this.#heldBytes === 0 && !this.#passing) return null;
    const completion = Buffer.from(this.#line.lineEmpty && !this.#line.afterCR ? '\n' : '\n\n');
    if (this.#passing) this.#endPassing(completion, out);
    else this.#emit(Buffer.concat([...this.#held, completion]), out, this.#filter.needles());
    this.#held = [];
    this.#heldBytes = 0;
    return join(out);
  }

  /** The stream broke off: what ends a frame already sent in part (a large one), so that what follows is a frame of its own. */
  cut(): Buffer | null {
    this.#held = [];
    this.#heldBytes = 0;
    if (!this.#passing) return null;
    this.#passing = false;
    this.#passed = null;
    return Buffer.from('\n\n');
  }

  /** Whole frames: one needle search over all of them; only frames holding a needle are cut out and inspected. */
  #scan(bytes: Buffer, state: LineState, out: Buffer[]): void {
    const needles = this.#filter.needles();
    let from = 0;
    for (;;) {
      const at = firstNeedle(bytes, needles, from);
      if (at === -1) {
        if (from < bytes.length) out.push(from === 0 ? bytes : bytes.subarray(from));
        this.#lastDropped = false;
        return;
      }
      const before = bytes.subarray(from, at);
      const startInBefore = lastFrameEnd(before, from === 0 ? state : MID_LINE);
      const start = startInBefore === -1 ? from : from + startInBefore;
      const end = at + firstFrameEnd(bytes.subarray(at), MID_LINE);
      if (start > from) out.push(bytes.subarray(from, start));
      this.#emit(bytes.subarray(start, end), out, needles);
      from = end;
      if (from >= bytes.length) return;
    }
  }

  #emit(frame: Buffer, out: Buffer[], needles: readonly Buffer[]): void {
    const result = firstNeedle(frame, needles, 0) === -1 ? undefined : this.#filter.inspect(frame);
    this.#lastDropped = result === null;
    if (result === undefined) out.push(frame);
    else if (result !== null) out.push(result);
  }

  #hold(bytes: Buffer, out: Buffer[]): void {
    this.#held.push(bytes);
    this.#heldBytes += bytes.length;
    if (this.#heldBytes > this.#maxFrame) {
      this.#held = [];
      this.#heldBytes = 0;
      throw new EventTooLarge(this.#maxFrame);
    }
    if (this.#heldBytes <= MAX_HELD || this.#maxFrame !== Infinity) return;
    out.push(...this.#held);
    this.#passing = true;
    this.#passed = this.#held;
    this.#passedBytes = this.#heldBytes;
    this.#held = [];
    this.#heldBytes = 0;
  }

  #pass(bytes: Buffer, out: Buffer[]): void {
    out.push(bytes);
    if (this.#passed === null) return;
    this.#passedBytes += bytes.length;
    if (this.#passedBytes > MAX_INSPECTED) this.#passed = null;
    else this.#passed.push(bytes);
  }

  /** The passed frame's last bytes: sent, and the whole frame read (the verdict cannot apply any more). */
  #endPassing(last: Buffer, out: Buffer[]): void {
    this.#pass(last, out);
    const frame = this.#passed && Buffer.concat(this.#passed);
    if (frame && firstNeedle(frame, this.#filter.needles(), 0) !== -1) this.#filter.inspect(frame);
    this.#passing = false;
    this.#passed = null;
    this.#passedBytes = 0;
    this.#lastDropped = false;
  }
}

function join(out: Buffer[]): Buffer | null {
  if (out.length === 0) return null;
  return out.length === 1 ? out[0] : Buffer.concat(out);
}

function firstNeedle(bytes: Buffer, needles: readonly Buffer[], from: number): number {
  let first = -1;
  for (const needle of needles) {
    const at = bytes.indexOf(needle, from);
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  return first;
}

const isBreak = (byte: number) => byte === LF || byte === CR;

/** Does the run of line breaks bytes[from, to) hold a blank line, given the line state before it? */
function runEndsFrame(bytes: Buffer, from: number, to: number, state: LineState): boolean {
  let { lineEmpty, afterCR } = state;
  for (let i = from; i < to; i++) {
    const byte = bytes[i];
    if (byte === LF && afterCR) {
      afterCR = false;
      continue;
    }
    if (lineEmpty) return true;
    lineEmpty = true;
    afterCR = byte === CR;
  }
  return false;
}

/** The end of the last frame in `bytes` (just past its run of line breaks), or -1; scans back from the end. */
export function lastFrameEnd(bytes: Buffer, state: LineState): number {
  let i = bytes.length - 1;
  while (i >= 0) {
    while (i >= 0 && !isBreak(bytes[i])) i--;
    if (i < 0) return -1;
    const to = i + 1;
    let from = i;
    while (from > 0 && isBreak(bytes[from - 1])) from--;
    if (runEndsFrame(bytes, from, to, from === 0 ? state : MID_LINE)) return to;
    i = from - 1;
  }
  return -1;
}

/** The end of the first frame in `bytes`, or bytes.length when none ends there. */
export function firstFrameEnd(bytes: Buffer, state: LineState): number {
  let i = 0;
  while (i < bytes.length) {
    while (i < bytes.length && !isBreak(bytes[i])) i++;
    if (i >= bytes.length) break;
    const from = i;
    while (i < bytes.length && isBreak(bytes[i])) i++;
    if (runEndsFrame(bytes, from, i, from === 0 ? state : MID_LINE)) return i;
  }
  return bytes.length;
}
