/**
 * The Node context store (AsyncLocalStorage behind runScoped's nesting rule): values follow awaits
 * within a run, and the store is disabled once its last run has settled, so Node's process-wide
 * promise hooks are not left on for every later promise (a per-call cost of gpu chains).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nodePlatform } from '../../src/platform/node.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('node context store', () => {
  afterEach(() => vi.restoreAllMocks());

  it('keeps each run\'s value across awaits, for overlapping and nested runs', async () => {
    const store = nodePlatform.createContextStore<string>();
    const seen: (string | undefined)[] = [];
    const a = store.run('a', async () => {
      await tick();
      seen.push(store.getStore());
      await store.run('inner', async () => {
        await tick();
        seen.push(store.getStore());
      });
      seen.push(store.getStore());
    });
    const b = store.run('b', async () => {
      await tick();
      seen.push(store.getStore());
    });
    await Promise.all([a, b]);
    expect(seen.sort()).toEqual(['a', 'a', 'b', 'inner']);
    expect(store.getStore()).toBeUndefined();
  });

  it('is disabled once its last run settles, not before, and enabled again by the next run', async () => {
    const disable = vi.spyOn(AsyncLocalStorage.prototype, 'disable');
    const store = nodePlatform.createContextStore<number>();
    let release!: () => void;
    const first = store.run(1, () => new Promise<void>((resolve) => (release = resolve)));
    const second = store.run(2, async () => {
      await tick();
      return store.getStore();
    });
    expect(await second).toBe(2);
    expect(disable).not.toHaveBeenCalled(); // the first run is still in progress
    release();
    await first;
    await tick();
    expect(disable).toHaveBeenCalledTimes(1);
    // A later run works as before.
    expect(await store.run(3, async () => {
      await tick();
      return store.getStore();
    })).toBe(3);
    await tick();
    expect(disable).toHaveBeenCalledTimes(2);
  });

  it('settles synchronous runs, runs that throw and runs whose promise rejects', async () => {
    const disable = vi.spyOn(AsyncLocalStorage.prototype, 'disable');
    const store = nodePlatform.createContextStore<number>();
    expect(store.run(1, () => store.getStore())).toBe(1);
    expect(disable).toHaveBeenCalledTimes(1);
    expect(() => store.run(2, () => {
      throw new Error('boom');
    })).toThrow('boom');
    expect(disable).toHaveBeenCalledTimes(2);
    await expect(store.run(3, async () => {
      await tick();
      throw new Error('later');
    })).rejects.toThrow('later');
    await tick();
    expect(disable).toHaveBeenCalledTimes(3);
  });
});
