// What `npm run image:test` needs on the machine before it builds anything: the container tools and
// the Debian packages that carry them (the ones .ci/run installs). Checked first, so that a machine
// without them is told what to install instead of ending in a bare `exit 127` from the build script.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** Command on PATH → the Debian package that installs it. */
export const IMAGE_TOOLS: ReadonlyArray<[command: string, debianPackage: string]> = [
  ['buildah', 'buildah'],
  ['podman', 'podman'],
  ['crun', 'crun'],
  ['mmdebstrap', 'mmdebstrap'],
  ['slirp4netns', 'slirp4netns'],
  ['newuidmap', 'uidmap'],
  ['unshare', 'util-linux'],
];

function onPath(command: string, searchPath: string): boolean {
  return searchPath.split(path.delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(path.join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The tools not found on `searchPath`, with their packages; empty when everything is there. */
export function missingImageTools(searchPath = process.env.PATH ?? ''): Array<{ command: string; debianPackage: string }> {
  return IMAGE_TOOLS.filter(([command]) => !onPath(command, searchPath)).map(([command, debianPackage]) => ({ command, debianPackage }));
}

/** The message for a machine that lacks some: what is missing and the command that installs it. */
export function missingToolsMessage(missing: ReadonlyArray<{ command: string; debianPackage: string }>): string {
  const packages = [...new Set(missing.map((m) => m.debianPackage))];
  return [
    `image:test needs container tools that are not on PATH: ${missing.map((m) => m.command).join(', ')}.`,
    'On Debian or Ubuntu, install them (as .ci/run does) with:',
    `  sudo apt-get install -y --no-install-recommends ${packages.join(' ')}`,
    'then run it as root (mmdebstrap builds the base image in root mode, podman runs rootful): sudo npm run image:test',
  ].join('\n');
}
