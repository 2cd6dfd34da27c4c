// node:util parseArgs, with its errors turned into usage errors (exit 2) that carry the command's help.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { loadConfig } from '../config.ts';
import { UsageError } from './errors.ts';

const HELP: ParseArgsOptionsConfig = { help: { type: 'boolean', short: 'h' } };

export interface ParsedCommand {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  help: boolean;
}

export function parseCommand(args: string[], options: ParseArgsOptionsConfig, usage: string, positionals: { min: number; max: number }): ParsedCommand {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options: { ...options, ...HELP }, strict: true, allowPositionals: true });
  } catch (error) {
    // parseArgs appends a hint about `--` that only confuses a mistyped flag; keep the first sentence.
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''), usage);
  }
  const help = parsed.values.help === true;
  if (!help) {
    const count = parsed.positionals.length;
    if (count > positionals.max) throw new UsageError(`unexpected argument "${parsed.positionals[positionals.max]}"`, usage);
    if (count < positionals.min) throw new UsageError('missing argument', usage);
  }
  return { values: parsed.values as ParsedCommand['values'], positionals: parsed.positionals, help };
}

/** --file, else the same default as the gateway itself (TOLLGATE_CONFIG, else ./data/tollgate.yaml). */
export function manifestFile(values: ParsedCommand['values'], env: NodeJS.ProcessEnv): string {
  return typeof values.file === 'string' ? values.file : loadConfig(env).configFile;
}

export function stringOption(values: ParsedCommand['values'], name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}
