#!/usr/bin/env node
// Launcher for the `tollgate` command. The CLI is TypeScript that Node runs directly by stripping
// types (Node >= 23.6, and 22.18+); there is no build step, so an older Node cannot run it at all.
// process.features.typescript says whether this Node can (it is false when stripping is turned off);
// the version check covers Nodes that predate the flag. Node never strips types under node_modules/,
// which is fine for the workspace: its bin link resolves to the real path in gateway/.
const [major, minor] = process.versions.node.split('.').map(Number);
const canStripTypes = 'typescript' in process.features ? Boolean(process.features.typescript) : major > 23 || (major === 23 && minor >= 6);

if (canStripTypes) {
  await import('../src/cli/main.ts');
} else {
  process.stderr.write(
    `tollgate: this Node (${process.version}) cannot run TypeScript directly; Node 24 is required.\n` +
      `Run it through the project's pinned Node 24 instead:\n\n` +
      `    npm run -s tollgate -- <command> ...   (from the repository root)\n` +
      `    npx tollgate <command> ...             (Node 24 comes from the pinned devDependency)\n\n`,
  );
  process.exitCode = 1;
}
