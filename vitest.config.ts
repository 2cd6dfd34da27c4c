import { defineConfig } from 'vitest/config';

// Fast unit tests of pure modules; end-to-end suites that start the real server on port 0 and drive
// it with the official openai SDK and raw HTTP; and the suites that measure a gateway process's
// memory, which `npm test` runs on their own after the others (as the bench measures alone): with
// every other suite competing for two cores, when garbage is collected says more about the machine
// than about the gateway.
const ALONE = ['test/hostile/memory.test.ts'];

export default defineConfig({
  test: {
    projects: [
      { extends: true, test: { name: 'unit', include: ['**/src/**/*.test.ts'], exclude: ['**/node_modules/**', '.tools/**'] } },
      { extends: true, test: { name: 'e2e', include: ['test/**/*.test.ts'], exclude: ['**/node_modules/**', '.tools/**', ...ALONE], testTimeout: 60_000, hookTimeout: 60_000 } },
      { extends: true, test: { name: 'alone', include: ALONE, testTimeout: 180_000, hookTimeout: 60_000 } },
    ],
  },
});
