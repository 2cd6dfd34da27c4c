// What a command may touch of the outside world, passed in so commands never reach for globals.
export interface CliIO {
  env: NodeJS.ProcessEnv;
  /** The command's result: a key, a manifest, a table. Safe to pipe. */
  out(text: string): void;
  /** Everything meant for the person at the terminal: notes, warnings, errors. */
  err(text: string): void;
}

/** Asked-for help is the command's output: stdout, exit 0 (unlike usage after a mistake). */
export function printHelp(io: CliIO, usage: string): number {
  io.out(usage);
  return 0;
}
