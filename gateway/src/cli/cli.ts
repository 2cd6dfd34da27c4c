// Dispatch: `tollgate <command> [<subcommand>] [options]`. Returns the exit code instead of exiting,
// so pending output is flushed by Node's normal shutdown rather than cut off.
import { CliError, UsageError } from './errors.ts';
import { crds } from './crds.ts';
import { printHelp, type CliIO } from './io.ts';
import { keysCreate, keysList, keysRevoke } from './keys.ts';
import { CRDS_USAGE, KEYS_CREATE_USAGE, KEYS_LIST_USAGE, KEYS_REVOKE_USAGE, KEYS_USAGE, MAIN_USAGE, USAGE_REPORT_USAGE, VALIDATE_USAGE } from './usage.ts';
import { usageReport } from './usage-report.ts';
import { validate } from './validate.ts';

type Command = (args: string[], io: CliIO) => Promise<number>;

const KEYS: Record<string, { run: Command; usage: string }> = {
  create: { run: keysCreate, usage: KEYS_CREATE_USAGE },
  revoke: { run: keysRevoke, usage: KEYS_REVOKE_USAGE },
  list: { run: keysList, usage: KEYS_LIST_USAGE },
};

const TOP: Record<string, { run: Command; usage: string }> = {
  keys: { run: runKeys, usage: KEYS_USAGE },
  validate: { run: validate, usage: VALIDATE_USAGE },
  crds: { run: crds, usage: CRDS_USAGE },
  usage: { run: usageReport, usage: USAGE_REPORT_USAGE },
};

const isHelpFlag = (arg: string | undefined) => arg === '--help' || arg === '-h';

async function runKeys(args: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = args;
  if (isHelpFlag(sub)) return printHelp(io, KEYS_USAGE);
  if (sub === undefined) throw new UsageError('keys: missing subcommand', KEYS_USAGE);
  const command = Object.hasOwn(KEYS, sub) ? KEYS[sub] : undefined;
  if (!command) throw new UsageError(`unknown command "keys ${sub}"`, KEYS_USAGE);
  return command.run(rest, io);
}

/** `tollgate help keys create` → the help of that command. */
function helpFor(path: string[]): string {
  const [first, second] = path;
  if (first === undefined) return MAIN_USAGE;
  const top = Object.hasOwn(TOP, first) ? TOP[first] : undefined;
  if (!top) throw new UsageError(`no help for unknown command "${path.join(' ')}"`, MAIN_USAGE);
  if (first !== 'keys' || second === undefined) return top.usage;
  const sub = Object.hasOwn(KEYS, second) ? KEYS[second] : undefined;
  if (!sub) throw new UsageError(`no help for unknown command "${path.join(' ')}"`, KEYS_USAGE);
  return sub.usage;
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  try {
    const [first, ...rest] = argv;
    if (first === undefined) throw new UsageError('missing command', MAIN_USAGE);
    if (isHelpFlag(first)) return printHelp(io, MAIN_USAGE);
    if (first === 'help') return printHelp(io, helpFor(rest));
    const command = Object.hasOwn(TOP, first) ? TOP[first] : undefined;
    if (!command) throw new UsageError(first.startsWith('-') ? `unknown option "${first}"` : `unknown command "${first}"`, MAIN_USAGE);
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`tollgate: ${error.message}\n\n${error.usage}`);
      return error.exitCode;
    }
    if (error instanceof CliError) {
      io.err(`tollgate: ${error.message}\n`);
      return error.exitCode;
    }
    io.err(`tollgate: ${(error as Error).message ?? String(error)}\n`);
    return 1;
  }
}
