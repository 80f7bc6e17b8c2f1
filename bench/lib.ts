/** Helpers shared by the benchmarks in bench/. */
import { execSync } from 'node:child_process';

/**
 * Deterministic PRNG (mulberry32), so every run generates the same data.
 * @param seed any 32-bit integer
 * @returns a function giving floats in [0, 1)
 */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Time `fn` in ms; dirty pages are flushed first (not timed) so earlier steps' writeback does not leak in. */
export async function time<T>(fn: () => Promise<T> | T): Promise<[number, T]> {
  execSync('sync');
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, r];
}

/** Median of a non-empty list. */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
