// The protocol-neutral conversation that service-test answers. Chat Completions and Responses each
// translate their wire format into this and the answer back, so both endpoints behave alike.
import type { DescribedFile } from './file-inputs.ts';
import type { DescribedImage } from './vision.ts';

export type JsonSchema = Record<string, unknown>;

export interface ToolSpec {
  name: string;
  description?: string;
  parameters?: JsonSchema;
}

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as on the wire. */
  arguments: string;
}

export type Turn =
  | { role: 'system' | 'developer'; text: string }
  | { role: 'user'; text: string; images: DescribedImage[]; files?: DescribedFile[] }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  | { role: 'tool'; toolCallId: string; text: string };

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

export type OutputFormat = { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name: string; schema: JsonSchema };

export interface Conversation {
  turns: Turn[];
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  parallelToolCalls: boolean;
  format: OutputFormat;
}

export type Answer = { kind: 'text'; text: string } | { kind: 'tool_calls'; calls: ToolCall[] };
