import { defineConfig } from 'vitest/config';

// Two projects: fast unit tests of pure modules, and end-to-end suites that start the real server on
// port 0 and drive it with the official openai SDK and raw HTTP.
export default defineConfig({
  test: {
    projects: [
      { extends: true, test: { name: 'unit', include: ['**/src/**/*.test.ts'], exclude: ['**/node_modules/**', '.tools/**'] } },
      { extends: true, test: { name: 'e2e', include: ['test/**/*.test.ts'], exclude: ['**/node_modules/**', '.tools/**'], testTimeout: 60_000, hookTimeout: 60_000 } },
    ],
  },
});
