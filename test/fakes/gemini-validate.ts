// The request checks of the fake Gemini API / Vertex AI, as strict as Google's (providers.md §10.1):
// proto field names (an unknown field is "Unknown name … Cannot find field"), contents and parts,
// alternating roles, function responses matching the previous turn's calls in number with names, the
// OpenAPI subset of `parameters`, tool config, Gemini 3's thought signatures, Vertex's stricter rules.
// Each failure is Google's message, thrown as a FakeGoogleError the server answers with.

export class FakeGoogleError extends Error {
  readonly code: number;
  readonly status: string;
  readonly details: unknown[];
  constructor(code: number, status: string, message: string, details: unknown[] = []) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

type Json = Record<string, any>;

const invalid = (message: string) => new FakeGoogleError(400, 'INVALID_ARGUMENT', message);
const unknownField = (name: string, at: string) => invalid(`Invalid JSON payload received. Unknown name "${name}" at '${at}': Cannot find field.`);

const REQUEST_FIELDS = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'cachedContent', 'labels', 'model']);
const GENERATION_FIELDS = new Set(['maxOutputTokens', 'temperature', 'topP', 'topK', 'stopSequences', 'seed', 'presencePenalty', 'frequencyPenalty', 'candidateCount', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig', 'responseLogprobs', 'logprobs', 'responseModalities', 'mediaResolution']);
const PART_DATA = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult'];
const PART_FIELDS = new Set([...PART_DATA, 'thought', 'thoughtSignature', 'videoMetadata', 'mediaResolution']);
const SCHEMA_FIELDS = new Set(['type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required', 'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering', 'default', 'items', 'minimum', 'maximum']);
const SIGNATURE_MESSAGE = (name: string, position: number) =>
  `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export interface ValidationContext {
  vertex: boolean;
  model: string;
  /** Thought signatures the fake issued (Gemini 3 models check replayed calls against them). */
  signatures: Set<string>;
}

export function validateGenerate(body: Json, ctx: ValidationContext): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('Invalid JSON payload received.');
  for (const key of Object.keys(body)) if (!REQUEST_FIELDS.has(key)) throw unknownField(key, '');
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) throw invalid('* GenerateContentRequest.contents: contents is not specified\n');
  if (body.cachedContent && (body.systemInstruction || body.tools || body.toolConfig)) {
    throw invalid('CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.');
  }
  if (body.systemInstruction) validateParts(body.systemInstruction.parts, 'system_instruction', ctx);

  const three = /gemini-[3-9]/.test(ctx.model);
  let previousRole: string | null = null;
  contents.forEach((content: Json, i: number) => {
    const role = content.role;
    if (role === undefined && ctx.vertex) throw invalid('Please use a valid role: user, model.');
    if (role !== undefined && role !== 'user' && role !== 'model') throw invalid('Please use a valid role: user, model.');
    const effective = role ?? 'user';
    if (effective === previousRole) throw invalid('Please ensure that multiturn requests alternate between user and model.');
    previousRole = effective;
    validateParts(content.parts, `contents[${i}]`, ctx);

    const calls = content.parts.filter((part: Json) => part.functionCall);
    if (effective === 'model' && calls.length > 0) {
      const next = contents[i + 1];
      const responses = next ? next.parts.filter((part: Json) => part.functionResponse) : [];
      if (next && responses.length !== calls.length) {
        throw invalid('Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.');
      }
      if (three) {
        const signature = calls[0].thoughtSignature;
        if (signature !== SKIP_SIGNATURE && !ctx.signatures.has(signature)) throw invalid(SIGNATURE_MESSAGE(calls[0].functionCall.name, content.parts.indexOf(calls[0]) + 1));
      }
    }
    if (effective === 'user') {
      content.parts.forEach((part: Json, j: number) => {
        if (!part.functionResponse) return;
        const previous = contents[i - 1];
        if (!previous || previous.role !== 'model' || !previous.parts.some((p: Json) => p.functionCall)) {
          throw invalid('Please ensure that function response turn comes immediately after a function call turn.');
        }
        if (!part.functionResponse.name) throw invalid(`* GenerateContentRequest.contents[${i}].parts[${j}].function_response.name: Name cannot be empty.\n`);
        const response = part.functionResponse.response;
        if (typeof response !== 'object' || response === null || Array.isArray(response)) throw invalid(`Invalid value at 'contents[${i}].parts[${j}].function_response.response' (type.googleapis.com/google.protobuf.Struct)`);
      });
    }
  });

  if (body.tools) validateTools(body.tools);
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  if (mode !== undefined && !['AUTO', 'ANY', 'NONE', 'VALIDATED'].includes(mode)) throw invalid(`Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "${mode}"`);
  if (body.toolConfig?.functionCallingConfig?.allowedFunctionNames && mode !== 'ANY') throw invalid('allowed_function_names is only allowed when function calling mode is ANY.');

  const config = body.generationConfig;
  if (config) {
    for (const key of Object.keys(config)) if (!GENERATION_FIELDS.has(key)) throw unknownField(key, 'generation_config');
    if (config.temperature !== undefined && (config.temperature < 0 || config.temperature > 2)) throw invalid('* GenerateContentRequest.generation_config.temperature: must be in the range [0.0, 2.0]\n');
    if (config.maxOutputTokens !== undefined && (!Number.isInteger(config.maxOutputTokens) || config.maxOutputTokens < 1)) throw invalid('* GenerateContentRequest.generation_config.max_output_tokens: must be positive\n');
    const thinking = config.thinkingConfig;
    if (thinking?.thinkingLevel !== undefined && !three) throw invalid('Thinking level is not supported for this model.');
    if (thinking?.thinkingLevel !== undefined && thinking.thinkingBudget !== undefined) throw invalid('You can only set only one of thinking budget and thinking level.');
    if ((config.responseSchema || config.responseJsonSchema) && config.responseMimeType !== 'application/json') throw invalid("* GenerateContentRequest.generation_config.response_mime_type: must be 'application/json' when response_schema is set.\n");
    if (config.responseSchema) validateSchema(config.responseSchema, 'generation_config.response_schema');
  }
}

function validateParts(parts: unknown, at: string, ctx: ValidationContext): void {
  if (!Array.isArray(parts) || parts.length === 0) throw invalid(`* GenerateContentRequest.${at}.parts: contents.parts must not be empty.\n`);
  parts.forEach((part: Json, j: number) => {
    for (const key of Object.keys(part)) if (!PART_FIELDS.has(key)) throw unknownField(key, `${at}.parts[${j}]`);
    const data = PART_DATA.filter((key) => part[key] !== undefined);
    if (data.length !== 1 || (data[0] === 'text' && typeof part.text !== 'string')) throw invalid(`* GenerateContentRequest.${at}.parts[${j}].data: required oneof field 'data' must have one initialized field\n`);
    if (part.text === '') throw invalid(`* GenerateContentRequest.${at}.parts[${j}].data: required oneof field 'data' must have one initialized field\n`);
    if (part.inlineData && (typeof part.inlineData.mimeType !== 'string' || typeof part.inlineData.data !== 'string')) throw invalid(`* GenerateContentRequest.${at}.parts[${j}].inline_data: mime_type and data are required\n`);
    if (part.fileData) {
      const uri = String(part.fileData.fileUri ?? '');
      if (uri.startsWith('gs://') && !part.fileData.mimeType) throw invalid(`* GenerateContentRequest.${at}.parts[${j}].file_data.mime_type: a mime type is required for gs:// URIs\n`);
      if (ctx.vertex && /^https?:/.test(uri)) throw invalid(`Cannot fetch content from the provided URL: ${uri}`);
    }
    for (const field of ['functionCall', 'functionResponse']) {
      if (part[field] && ctx.vertex && part[field].id !== undefined) throw unknownField('id', `${at}.parts[${j}].${field === 'functionCall' ? 'function_call' : 'function_response'}`);
    }
    if (part.functionCall && (typeof part.functionCall.args !== 'object' || Array.isArray(part.functionCall.args))) throw invalid(`Invalid value at '${at}.parts[${j}].function_call.args' (type.googleapis.com/google.protobuf.Struct)`);
  });
}

function validateTools(tools: Json[]): void {
  tools.forEach((tool, i) => {
    (tool.functionDeclarations ?? []).forEach((declaration: Json, j: number) => {
      if (!/^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/.test(declaration.name ?? '')) throw invalid(`* GenerateContentRequest.tools[${i}].function_declarations[${j}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 128.\n`);
      if (declaration.parameters && declaration.parametersJsonSchema) throw invalid(`* GenerateContentRequest.tools[${i}].function_declarations[${j}]: parameters and parameters_json_schema cannot both be set.\n`);
      if (declaration.parameters) validateSchema(declaration.parameters, `tools[${i}].function_declarations[${j}].parameters`);
    });
  });
}

/** Google's `Schema` message: its own fields only, one type, string enums. */
function validateSchema(schema: Json, at: string): void {
  for (const key of Object.keys(schema)) if (!SCHEMA_FIELDS.has(key)) throw unknownField(key, at);
  if (schema.type !== undefined && typeof schema.type !== 'string') throw invalid(`Invalid value at '${at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), ${JSON.stringify(schema.type)}`);
  if (schema.enum && !schema.enum.every((value: unknown) => typeof value === 'string')) throw invalid(`Invalid value at '${at}.enum': only strings are allowed.`);
  for (const [name, value] of Object.entries(schema.properties ?? {})) validateSchema(value as Json, `${at}.properties[${name}].value`);
  if (schema.items) validateSchema(schema.items, `${at}.items`);
  (schema.anyOf ?? []).forEach((alt: Json, k: number) => validateSchema(alt, `${at}.any_of[${k}]`));
}
