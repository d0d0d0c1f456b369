import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // One child process per test file: dawn.node (the gpu target) is a native addon with its own
    // threads, and a fresh process gives each file its own WebGPU instance and device.
    pool: 'forks',
    // Internal modules need a platform; the package entries install one, tests import around them.
    setupFiles: ['tests/setup-platform.ts'],
    // In the main process: keeps it alive until every file has reported, and fails a stuck run.
    globalSetup: ['tests/global-setup.ts'],
  },
});
