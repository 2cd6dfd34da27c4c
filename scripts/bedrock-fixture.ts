// Writes each test/fixtures/providers/bedrock/<case>/upstream-response.bin from the readable
// upstream-events.json beside it: every message framed as AWS frames ConverseStream (prelude, headers,
// payload, both CRCs) by @smithy/eventstream-codec through providers/bedrock/frames.ts, never by hand.
// `upstream-events.json` is `{ "frames": [...], "cutLastFrameAt"?: n }`: a frame is either an event
// `{ "event": "<:event-type>", "payload": {...} }` (the padding field `p` that AWS adds is added here,
// different for each frame), an exception `{ "exception": "<:exception-type>", "payload": {...} }` or
// an error `{ "error": "<:error-code>", "message": "<:error-message>" }`; `cutLastFrameAt` keeps only
// that many bytes of the last frame (a body cut mid-frame). The golden test checks that each .bin
// still decodes to its events. Run: node scripts/bedrock-fixture.ts
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { encodeMessage } from '../gateway/src/providers/bedrock/frames.ts';

export interface FixtureFrame {
  event?: string;
  exception?: string;
  error?: string;
  message?: string;
  payload?: Record<string, unknown>;
}

export interface FixtureEvents {
  frames: FixtureFrame[];
  cutLastFrameAt?: number;
}

const PADDING = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** One frame's bytes; `i` (its position) sets the length of the padding, as AWS's padding varies. */
export function encodeFrame(frame: FixtureFrame, i: number): Buffer {
  if (frame.event) {
    return encodeMessage({ ':event-type': frame.event, ':content-type': 'application/json', ':message-type': 'event' }, { ...frame.payload, p: PADDING.slice(0, 3 + (i % 40)) });
  }
  if (frame.exception) {
    return encodeMessage({ ':exception-type': frame.exception, ':content-type': 'application/json', ':message-type': 'exception' }, frame.payload ?? {});
  }
  if (frame.error) return encodeMessage({ ':error-code': frame.error, ':error-message': frame.message ?? '', ':message-type': 'error' }, undefined);
  throw new Error(`a fixture frame needs event, exception or error: ${JSON.stringify(frame)}`);
}

export function encodeEvents(events: FixtureEvents): Buffer {
  const frames = events.frames.map(encodeFrame);
  if (events.cutLastFrameAt !== undefined) frames[frames.length - 1] = frames.at(-1)!.subarray(0, events.cutLastFrameAt);
  return Buffer.concat(frames);
}

if (import.meta.main) {
  const root = new URL('../test/fixtures/providers/bedrock/', import.meta.url);
  for (const name of readdirSync(root)) {
    const events = new URL(`${name}/upstream-events.json`, root);
    if (!existsSync(events)) continue;
    writeFileSync(new URL(`${name}/upstream-response.bin`, root), encodeEvents(JSON.parse(readFileSync(events, 'utf8')) as FixtureEvents));
    console.log(`wrote ${name}/upstream-response.bin`);
  }
}
