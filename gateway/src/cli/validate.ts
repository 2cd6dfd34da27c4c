// `tollgate validate`: the gateway's own parser and validator, so "valid here" means "applied there".
import type { Kind } from '@tollgate/crds';
import { parseManifests } from '../resources/manifests.ts';
import { Snapshot } from '../resources/snapshot.ts';
import { manifestFile, parseCommand } from './args.ts';
import { readManifestText } from './files.ts';
import { printHelp, type CliIO } from './io.ts';
import { VALIDATE_USAGE } from './usage.ts';

export async function validate(args: string[], io: CliIO): Promise<number> {
  const { values, positionals, help } = parseCommand(args, {}, VALIDATE_USAGE, { min: 0, max: 1 });
  if (help) return printHelp(io, VALIDATE_USAGE);
  const file = positionals[0] ?? manifestFile(values, io.env);
  const parsed = parseManifests(await readManifestText(file), file);
  if (!parsed.ok) {
    for (const error of parsed.errors) io.err(`${error}\n`);
    io.err(`${file}: invalid, ${plural(parsed.errors.length, 'problem')}; the gateway would refuse it and keep its last good state\n`);
    return 1;
  }
  // Dangling references do not make the gateway refuse the file, so they warn without failing.
  for (const warning of new Snapshot(parsed.resources).warnings) io.err(`warning: ${warning}\n`);
  const counts = new Map<Kind, number>();
  for (const resource of parsed.resources) counts.set(resource.kind, (counts.get(resource.kind) ?? 0) + 1);
  const summary = [...counts].map(([kind, count]) => plural(count, kind)).join(', ') || 'no resources';
  io.out(`${file}: valid (${summary})\n`);
  return 0;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
