// The Gemini API (AI Studio) and Vertex AI serve the same models with the same GenerateContent body;
// they differ in where a model lives, how a caller authenticates and a few rules of the body (Vertex
// wants `role` on every content and refuses `id` on function calls and responses). One translation
// serves both, told which of the two it speaks by this variant.
import type { Upstream } from '@tollgate/crds';

export type GoogleSurface = 'gemini' | 'vertex';

/** The model-scoped path prefix: `/v1beta/models/{m}` or `/v1/projects/{p}/locations/{l}/publishers/google/models/{m}`. */
export function modelPath(surface: GoogleSurface, upstream: Upstream, model: string): string {
  const name = encodeURIComponent(model);
  if (surface === 'gemini') return `/v1beta/models/${name}`;
  const vertex = upstream.spec.vertex;
  // The schema's rule (a vertex upstream has vertex settings) makes a missing block unreachable for a valid object.
  if (!vertex) throw new Error(`Upstream '${upstream.metadata.name}' has no vertex settings`);
  return `/v1/projects/${encodeURIComponent(vertex.project)}/locations/${encodeURIComponent(vertex.location)}/publishers/google/models/${name}`;
}

/** The generation of a Gemini model, from its id: what its request may carry. */
export interface ModelTraits {
  /** Gemini 2.5 and later take full JSON Schema (`parametersJsonSchema`, `responseJsonSchema`). */
  jsonSchema: boolean;
  /** How thinking is configured: a token budget (2.5), a level (3 and later), or not at all. */
  thinking: 'budget' | 'level' | null;
  /** Gemini 3 and later refuse a replayed function call without the thought signature it came with. */
  thoughtSignatures: boolean;
  /** A Pro model (cannot turn thinking off; has no `minimal`/`medium` levels on Gemini 3). */
  pro: boolean;
  /** The largest thinking budget the model accepts (Pro 32768; Flash and Flash-Lite 24576): Gemini refuses a larger one. */
  maxThinkingBudget: number;
}

const PRO_MAX_THINKING_BUDGET = 32768;
const FLASH_MAX_THINKING_BUDGET = 24576;

export function modelTraits(model: string): ModelTraits {
  const match = /gemini-(\d+)(?:\.(\d+))?/.exec(model);
  const pro = /-pro\b/.test(model);
  const maxThinkingBudget = pro ? PRO_MAX_THINKING_BUDGET : FLASH_MAX_THINKING_BUDGET;
  // No version in the name (`gemini-flash-latest`, `gemini-pro-latest`): an alias of a current model.
  // Gemini 3 still takes a thinking budget, and a 2.5 model takes a replayed signature, so the
  // settings of 2.5 with signatures suit whichever generation the alias points at.
  if (!match) return { jsonSchema: true, thinking: 'budget', thoughtSignatures: true, pro, maxThinkingBudget };
  const major = Number(match[1]);
  const minor = match[2] ? Number(match[2]) : 0;
  const atLeast25 = major > 2 || (major === 2 && minor >= 5);
  const three = major >= 3;
  return { jsonSchema: atLeast25, thinking: three ? 'level' : atLeast25 ? 'budget' : null, thoughtSignatures: three, pro, maxThinkingBudget };
}
