// The `tollgate` command (gateway/bin/tollgate.js, `npm run tollgate --`, or `node gateway/src/cli/main.ts`).
import { runCli } from './cli.ts';

// A closed pipe (`tollgate crds | head`) is the reader's choice, not an error worth a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
});
