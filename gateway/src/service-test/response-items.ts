// Items of stored responses, by id: what an `item_reference` in a later `input` resolves to, and
// what GET /v1/responses/{id}/input_items lists. Each item is kept twice over: as the wire object a
// client sees, and as the engine's piece of conversation it stands for (a turn, or one function call
// that joins the assistant turn before it).
import { randomHexId } from './random-ids.ts';
import type { JsonObject } from '../http/body.ts';
import { invalidValue } from '../http/errors.ts';
import type { ToolCall, Turn } from './conversation.ts';

export type ItemPiece = { kind: 'turn'; turn: Turn } | { kind: 'call'; call: ToolCall };

export interface InputItem {
  wire: JsonObject;
  piece: ItemPiece;
}

export type StoredItem = InputItem;

export function randomItemId(prefix: string): string {
  return randomHexId(prefix, 24);
}

/** The output items of a Response object (responses-object.ts), as far as a reference needs them. */
type OutputItemShape = { type: 'function_call'; call_id: string; name: string; arguments: string } | { type: 'message'; content: Array<{ text: string }> };

/** A response's output items as stored items, so that the next request may reference them. */
export function outputItems(output: readonly OutputItemShape[]): StoredItem[] {
  return output.map((item): StoredItem => {
    if (item.type === 'function_call') return { wire: item as unknown as JsonObject, piece: { kind: 'call', call: { id: item.call_id, name: item.name, arguments: item.arguments } } };
    const text = item.content.map((part) => part.text).join('');
    return { wire: item as unknown as JsonObject, piece: { kind: 'turn', turn: { role: 'assistant', text, toolCalls: [] } } };
  });
}

/** Rough size of a stored item, for the store's byte budget. */
export function itemBytes(item: StoredItem): number {
  return 128 + JSON.stringify(item.wire).length;
}

export interface ItemPage {
  object: 'list';
  data: JsonObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** One page of a response's input items, with OpenAI's query: limit (1–100, default 20), order (default desc), after. */
export function pageOfItems(items: readonly JsonObject[], query: Record<string, unknown>): ItemPage {
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidValue('limit', "Invalid 'limit': expected an integer between 1 and 100.");
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidValue('order', "Invalid 'order': expected 'asc' or 'desc'.");
  const ordered = order === 'asc' ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after);
    if (at === -1) throw invalidValue('after', `Invalid 'after': no input item with id '${String(query.after).slice(0, 80)}' in this response.`);
    start = at + 1;
  }
  const data = ordered.slice(start, start + limit);
  return { object: 'list', data, first_id: (data[0]?.id as string | undefined) ?? null, last_id: (data.at(-1)?.id as string | undefined) ?? null, has_more: start + limit < ordered.length };
}
