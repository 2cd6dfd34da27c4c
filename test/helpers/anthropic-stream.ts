// Reads a Messages API event stream as text and checks the shape Claude Code relies on: exactly one
// message_start, first; every content block started, given deltas of its own kind, and stopped before
// the next starts, with sequential indices; tool input that parses as an object; one message_delta
// with the stop reason and usage, then message_stop, last. Returns the events and the rebuilt message.
export interface ParsedAnthropicStream {
  events: Array<{ event: string; data: any }>;
  blocks: any[];
  stopReason: string | null;
  usage: any;
}

export function parseAnthropicStream(text: string): ParsedAnthropicStream {
  const events = text
    .split(/\r?\n\r?\n/)
    .filter((frame) => frame.trim())
    .map((frame) => {
      const lines = frame.split(/\r?\n/);
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? '';
      const data = JSON.parse(lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n'));
      if (data.type !== event) throw new Error(`event '${event}' carries data of type '${data.type}'`);
      return { event, data };
    });
  const kinds = events.map((e) => e.event).filter((e) => e !== 'ping');
  if (kinds[0] !== 'message_start') throw new Error(`the first event is ${kinds[0]}, not message_start`);
  if (kinds.filter((k) => k === 'message_start').length !== 1) throw new Error('more than one message_start');
  if (kinds.at(-1) !== 'message_stop' || kinds.at(-2) !== 'message_delta') throw new Error(`the stream ends with ${kinds.slice(-2).join(', ')}, not message_delta, message_stop`);
  const blocks: any[] = [];
  let open: number | null = null;
  let stopReason: string | null = null;
  let usage: any = null;
  const partial: string[] = [];
  for (const { event, data } of events) {
    if (event === 'content_block_start') {
      if (open !== null) throw new Error(`block ${data.index} starts while block ${open} is open`);
      if (data.index !== blocks.length) throw new Error(`block index ${data.index} where ${blocks.length} was next`);
      open = data.index;
      blocks.push({ ...data.content_block });
      partial[data.index] = '';
    } else if (event === 'content_block_delta') {
      if (data.index !== open) throw new Error(`a delta for block ${data.index} while block ${open} is open`);
      const block = blocks[data.index];
      const delta = data.delta;
      if (delta.type === 'text_delta' && block.type === 'text') block.text += delta.text;
      else if (delta.type === 'thinking_delta' && block.type === 'thinking') block.thinking += delta.thinking;
      else if (delta.type === 'signature_delta' && block.type === 'thinking') block.signature = delta.signature;
      else if (delta.type === 'input_json_delta' && block.type === 'tool_use') partial[data.index] += delta.partial_json;
      else throw new Error(`a ${delta.type} in a ${block.type} block`);
    } else if (event === 'content_block_stop') {
      if (data.index !== open) throw new Error(`block ${data.index} stopped while block ${open} is open`);
      const block = blocks[data.index];
      if (block.type === 'tool_use') {
        const input = partial[data.index] ? JSON.parse(partial[data.index]) : {};
        if (!input || typeof input !== 'object' || Array.isArray(input)) throw new Error('tool input is not an object');
        block.input = input;
      }
      open = null;
    } else if (event === 'message_delta') {
      stopReason = data.delta.stop_reason;
      usage = data.usage;
    }
  }
  if (open !== null) throw new Error(`block ${open} never stopped`);
  return { events, blocks, stopReason, usage };
}
