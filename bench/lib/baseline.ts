// `--baseline REF`: the gateway of an older commit, measured in the same run as the current one.
// A plain copy of REF's gateway/, crds/ and config/ (`git archive`, no worktree, nothing registered in
// .git), with a node_modules of its own made of symlinks into the repository's root node_modules, except
// `@tollgate/crds` and `@tollgate/gateway`, which point at the copy's own crds/ and gateway/. Node
// resolves symlinks to real paths, so third-party packages load from the root as for the current
// gateway, and the baseline's `@tollgate/crds` is REF's, not the work tree's.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';

export interface Baseline {
  /** As given on the command line (HEAD~3, e73ba07, a branch …). */
  ref: string;
  commit: string;
  short: string;
  subject: string;
  /** The copy: its gateway/src/main.ts is what runs. */
  dir: string;
  /** `Tollgate@<short>`: the baseline's name in the tables. */
  label: string;
  /** Differences between REF's and the work tree's dependency lists (gateway/, crds/): REF runs on the current packages. */
  dependencyDrift: string[];
  remove(): void;
}

const PARTS = ['gateway', 'crds', 'config'];
const REQUIRED = ['gateway', 'crds'];

export function checkoutBaseline(root: string, ref: string, parent: string): Baseline {
  const git = (args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  let commit: string;
  try {
    commit = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch {
    throw new Error(`--baseline ${ref}: not a commit in ${root}`);
  }
  const short = git(['rev-parse', '--short', commit]);
  const subject = git(['log', '-1', '--format=%s', commit]);
  const has = (part: string) => {
    try {
      git(['cat-file', '-e', `${commit}:${part}`]);
      return true;
    } catch {
      return false;
    }
  };
  const parts = PARTS.filter(has);
  const missing = REQUIRED.filter((part) => !parts.includes(part));
  if (missing.length > 0) throw new Error(`--baseline ${ref} (${short}) has no ${missing.join(', ')}/`);

  const dir = path.join(parent, `baseline-${short}-${process.pid}`);
  const remove = () => rmSync(dir, { recursive: true, force: true });
  // Ctrl-C: procs.ts turns SIGINT and SIGTERM into process.exit, which still runs 'exit' listeners.
  process.once('exit', remove);
  try {
    mkdirSync(dir, { recursive: true });
    const tar = execFileSync('git', ['archive', '--format=tar', commit, ...parts], { cwd: root, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });
    execFileSync('tar', ['-x', '-C', dir], { input: tar, stdio: ['pipe', 'ignore', 'pipe'] });
    linkModules(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), dir);
  } catch (error) {
    remove();
    throw error;
  }
  return { ref, commit, short, subject, dir, label: `Tollgate@${short}`, dependencyDrift: dependencyDrift(git, root, commit), remove };
}

/** node_modules/<each entry of the root's> → the root's, but @tollgate/{crds,gateway} → the copy's own. */
function linkModules(from: string, to: string, copy: string): void {
  mkdirSync(to);
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.name === '.package-lock.json' || entry.name === '.bin' || entry.name.startsWith('.vite')) continue;
    if (entry.name === '@tollgate') {
      mkdirSync(path.join(to, '@tollgate'));
      for (const pkg of readdirSync(path.join(from, '@tollgate'))) {
        const own = pkg === 'crds' || pkg === 'gateway' ? path.join(copy, pkg) : path.join(from, '@tollgate', pkg);
        symlinkSync(own, path.join(to, '@tollgate', pkg));
      }
      continue;
    }
    symlinkSync(path.join(from, entry.name), path.join(to, entry.name));
  }
}

/** Dependencies declared differently at REF and in the work tree: those packages run at their current versions. */
function dependencyDrift(git: (args: string[]) => string, root: string, commit: string): string[] {
  const deps = (text: string) => (JSON.parse(text) as { dependencies?: Record<string, string> }).dependencies ?? {};
  const drift: string[] = [];
  for (const part of REQUIRED) {
    let then: Record<string, string>;
    let now: Record<string, string>;
    try {
      then = deps(git(['show', `${commit}:${part}/package.json`]));
      now = deps(readFileSync(path.join(root, part, 'package.json'), 'utf8'));
    } catch {
      drift.push(`${part}/package.json: could not compare`);
      continue;
    }
    for (const name of [...new Set([...Object.keys(then), ...Object.keys(now)])].sort()) {
      if (then[name] !== now[name]) drift.push(`${part}: ${name} ${then[name] ?? '(absent)'} at the baseline, ${now[name] ?? '(absent)'} now`);
    }
  }
  return drift;
}
