import { describe, expect, it } from 'vitest';
import { referencesIn } from '../http/body-references.ts';

describe('referencesIn', () => {
  it('finds every id a body points at, wherever it sits, with the parameter path', () => {
    const body = {
      input_file_id: 'file-in',
      assistant_id: 'asst_1',
      tool_resources: { file_search: { vector_store_ids: ['vs_1'] }, code_interpreter: { file_ids: ['file-a', 'file-b'] } },
      messages: [{ role: 'user', content: 'hi', attachments: [{ file_id: 'file-c', tools: [] }] }],
      metadata: { note: 'file_id is only a word here' },
    };
    expect(referencesIn(body)).toEqual([
      { param: 'input_file_id', id: 'file-in', kind: 'file' },
      { param: 'assistant_id', id: 'asst_1', kind: 'assistant' },
      { param: 'tool_resources.file_search.vector_store_ids[0]', id: 'vs_1', kind: 'vector_store' },
      { param: 'tool_resources.code_interpreter.file_ids[0]', id: 'file-a', kind: 'file' },
      { param: 'tool_resources.code_interpreter.file_ids[1]', id: 'file-b', kind: 'file' },
      { param: 'messages[0].attachments[0].file_id', id: 'file-c', kind: 'file' },
    ]);
  });

  it('stops at a bounded depth instead of walking an arbitrarily deep body', () => {
    let deep: Record<string, unknown> = { file_id: 'file-deep' };
    for (let i = 0; i < 100; i++) deep = { next: deep };
    expect(referencesIn(deep)).toEqual([]);
  });
});
