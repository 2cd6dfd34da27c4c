// Reading the manifest file for a command, with refusals an operator can act on.
import { readFile } from 'node:fs/promises';
import type { AnyResource } from '@tollgate/crds';
import { parseManifests } from '../resources/manifests.ts';
import { CliError } from './errors.ts';

export async function readManifestText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new CliError(`${file} does not exist (choose the file with --file or TOLLGATE_CONFIG)`);
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/**
 * The file's resources, or a refusal listing its problems: editing a file the gateway already refuses
 * would only hide the real problem behind a second one.
 */
export function validResources(text: string, file: string): AnyResource[] {
  const parsed = parseManifests(text, file);
  if (!parsed.ok) throw new CliError(`${file} is invalid; fix it first (tollgate validate ${file}):\n  ${parsed.errors.join('\n  ')}`);
  return parsed.resources;
}
