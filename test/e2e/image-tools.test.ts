// `npm run image:test` on a machine without the container tools says which are missing and how to
// install them (the Debian packages .ci/run installs), before it builds anything.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_TOOLS, missingImageTools } from '../../scripts/image-tools.ts';
import { ROOT } from '../helpers/cluster.ts';

const run = promisify(execFile);
let empty: string;
let tools: string;

beforeAll(async () => {
  empty = await mkdtemp(path.join(tmpdir(), 'tollgate-no-tools-'));
  tools = await mkdtemp(path.join(tmpdir(), 'tollgate-tools-'));
  for (const [command] of IMAGE_TOOLS) {
    await writeFile(path.join(tools, command), '#!/bin/sh\nexit 0\n');
    await chmod(path.join(tools, command), 0o755);
  }
});

afterAll(async () => {
  await rm(empty, { recursive: true, force: true });
  await rm(tools, { recursive: true, force: true });
});

describe('image:test without buildah and podman', () => {
  it('names the missing tools and the apt-get line that installs them, and exits 1 before building', async () => {
    const outcome = await run(process.execPath, [path.join(ROOT, 'scripts/image-test.ts')], { env: { PATH: empty, HOME: empty }, cwd: ROOT, timeout: 30_000 }).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/not on PATH: buildah, podman, crun, mmdebstrap, slirp4netns, newuidmap, unshare/);
    expect(outcome.stderr).toContain('apt-get install -y --no-install-recommends buildah podman crun mmdebstrap slirp4netns uidmap util-linux');
    expect(outcome.stderr).not.toContain('image build failed');
    expect(outcome.stdout).not.toMatch(/^ok - built/m);
  });

  it('finds the tools on PATH when they are there, and only the missing ones otherwise', () => {
    expect(missingImageTools(tools)).toEqual([]);
    expect(missingImageTools([empty, tools].join(path.delimiter))).toEqual([]);
    expect(missingImageTools(empty).map((m) => m.debianPackage)).toContain('uidmap');
  });
});
