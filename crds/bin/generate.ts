// Writes the CRDs into the Helm chart: `npx node crds/bin/generate.ts` (Node 24 strips the types).
// The unit test crds/src/crd-yaml.test.ts fails when the checked-in files differ from this output.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { crdFiles } from '../src/crd-yaml.ts';

export const CHART_CRDS_DIR = fileURLToPath(new URL('../../charts/tollgate/crds/', import.meta.url));

const files = crdFiles();
await mkdir(CHART_CRDS_DIR, { recursive: true });
// A renamed or removed kind must not leave a stale CRD behind in the chart.
for (const existing of await readdir(CHART_CRDS_DIR)) {
  if (existing.endsWith('.yaml') && !files.some((f) => f.name === existing)) await rm(path.join(CHART_CRDS_DIR, existing));
}
for (const file of files) await writeFile(path.join(CHART_CRDS_DIR, file.name), file.text);
process.stdout.write(`wrote ${files.length} CRDs to ${path.relative(process.cwd(), CHART_CRDS_DIR) || '.'}\n`);
