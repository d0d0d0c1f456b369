/**
 * IdleWait (platform.ts): the idle releases of the gpu device and its pools. A touch restarts the
 * wait without a timer of its own; the wait ends once, `ms` after the latest touch.
 */
import { describe, expect, it } from 'vitest';
import { IdleWait } from '../../src/platform/platform.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('IdleWait', () => {
  it('ends once, no sooner than `ms` after the latest touch', async () => {
    const ended: number[] = [];
    const wait = new IdleWait(() => ended.push(performance.now()));
    let last = performance.now();
    wait.touch(60);
    for (let k = 0; k < 5; k++) {
      await sleep(20);
      last = performance.now();
      wait.touch(60);
    }
    expect(ended).toEqual([]);
    await sleep(200);
    expect(ended.length).toBe(1);
    expect(ended[0]! - last).toBeGreaterThanOrEqual(59);
  });

  it('a shorter wait replaces a longer pending one; cancel stops it; a touch after the end starts anew', async () => {
    let ended = 0;
    const wait = new IdleWait(() => ended++);
    wait.touch(10_000);
    const start = performance.now();
    wait.touch(30);
    await sleep(100);
    expect(ended).toBe(1);
    expect(performance.now() - start).toBeLessThan(5_000);
    wait.touch(30);
    wait.cancel();
    await sleep(80);
    expect(ended).toBe(1);
    wait.touch(20);
    await sleep(80);
    expect(ended).toBe(2);
  });
});
