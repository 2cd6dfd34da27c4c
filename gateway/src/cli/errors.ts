// Two ways a command can fail, told apart by exit code: the request was understood but refused (1),
// or it was not understood at all (2, with the usage that would have helped).

export class CliError extends Error {
  readonly exitCode: number = 1;
}

export class UsageError extends CliError {
  override readonly exitCode: number = 2;
  readonly usage: string;

  constructor(message: string, usage: string) {
    super(message);
    this.usage = usage;
  }
}
