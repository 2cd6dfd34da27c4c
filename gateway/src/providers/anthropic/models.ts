// What the translation must know about each Claude model: the Messages API requires `max_tokens`
// (OpenAI does not), thinking is configured differently across generations, and the newer models
// refuse `temperature` with `top_p`. Model ids are matched by their longest known prefix, so dated
// snapshots (`claude-sonnet-4-5-20250929`) and `-latest` aliases find their family. The table is
// documented in docs/providers/anthropic.md; keep the two together. Bedrock's Claude models are looked
// up here too; how much they think per reasoning_effort is in ../claude-thinking.ts.

export interface ClaudeModel {
  /** `max_tokens` sent when the client gives neither max_completion_tokens nor max_tokens: the model's output maximum. */
  defaultMaxTokens: number;
  /** How reasoning_effort is expressed: a thinking budget (`enabled`), `adaptive` thinking with `output_config.effort`, or not at all. */
  thinking: 'budget' | 'adaptive' | 'none';
  /** The model answers 400 to `temperature` and `top_p` together. */
  samplingExclusive: boolean;
}

const FAMILIES: Array<[prefix: string, model: ClaudeModel]> = [
  ['claude-3-haiku', { defaultMaxTokens: 4096, thinking: 'none', samplingExclusive: false }],
  ['claude-3-opus', { defaultMaxTokens: 4096, thinking: 'none', samplingExclusive: false }],
  ['claude-3-5-haiku', { defaultMaxTokens: 8192, thinking: 'none', samplingExclusive: false }],
  ['claude-3-5-sonnet', { defaultMaxTokens: 8192, thinking: 'none', samplingExclusive: false }],
  ['claude-3-7-sonnet', { defaultMaxTokens: 64000, thinking: 'budget', samplingExclusive: false }],
  ['claude-sonnet-4-0', { defaultMaxTokens: 64000, thinking: 'budget', samplingExclusive: false }],
  ['claude-opus-4-0', { defaultMaxTokens: 32000, thinking: 'budget', samplingExclusive: false }],
  ['claude-opus-4-1', { defaultMaxTokens: 32000, thinking: 'budget', samplingExclusive: true }],
  ['claude-sonnet-4-5', { defaultMaxTokens: 64000, thinking: 'budget', samplingExclusive: true }],
  ['claude-haiku-4-5', { defaultMaxTokens: 64000, thinking: 'budget', samplingExclusive: true }],
  ['claude-opus-4-5', { defaultMaxTokens: 64000, thinking: 'budget', samplingExclusive: true }],
  ['claude-sonnet-4-6', { defaultMaxTokens: 64000, thinking: 'adaptive', samplingExclusive: true }],
  ['claude-opus-4-6', { defaultMaxTokens: 128000, thinking: 'adaptive', samplingExclusive: true }],
];

/**
 * A model the table does not know (a newer generation): a maximum every current Claude model
 * accepts, the thinking style of the current generation, and no temperature with top_p. A client
 * that wants a longer answer sends max_completion_tokens.
 */
export const UNKNOWN_MODEL: ClaudeModel = { defaultMaxTokens: 16384, thinking: 'adaptive', samplingExclusive: true };

// `claude-sonnet-4-20250514` and `claude-opus-4-20250514` (the first Claude 4 ids) have no minor
// version: they are matched by these exact stems followed by a date (`@` on Vertex AI: `claude-sonnet-4@20250514`).
const FIRST_CLAUDE_4 = /^claude-(sonnet|opus)-4[-@]\d{8}/;

export function claudeModel(id: string): ClaudeModel {
  const first = FIRST_CLAUDE_4.exec(id);
  if (first) return lookup(`claude-${first[1]}-4-0`);
  return lookup(id);
}

function lookup(id: string): ClaudeModel {
  let best: ClaudeModel | null = null;
  let bestLength = 0;
  for (const [prefix, model] of FAMILIES) {
    if (id.startsWith(prefix) && prefix.length > bestLength) {
      best = model;
      bestLength = prefix.length;
    }
  }
  return best ?? UNKNOWN_MODEL;
}
