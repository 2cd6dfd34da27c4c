// `tollgate crds`: the CRD YAML, generated from the same TypeBox schemas the gateway validates with.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
// Relative import: the crds package exports only its index, which does not (yet) re-export this module.
import { allCrdsYaml, crdFiles } from '../../../crds/src/crd-yaml.ts';
import { parseCommand, stringOption } from './args.ts';
import { printHelp, type CliIO } from './io.ts';
import { CRDS_USAGE } from './usage.ts';

export async function crds(args: string[], io: CliIO): Promise<number> {
  const { values, help } = parseCommand(args, { output: { type: 'string', short: 'o' } }, CRDS_USAGE, { min: 0, max: 0 });
  if (help) return printHelp(io, CRDS_USAGE);
  const directory = stringOption(values, 'output');
  if (directory === undefined) {
    io.out(allCrdsYaml());
    return 0;
  }
  await mkdir(directory, { recursive: true });
  for (const file of crdFiles()) {
    const target = path.join(directory, file.name);
    await writeFile(target, file.text);
    io.out(`${target}\n`);
  }
  return 0;
}
