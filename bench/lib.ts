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

/**
 * Build the `agentkeep` program into `root`/out as esbuild.mjs does (the launcher out/sidecar.js, the
 * full CLI out/cli.js, the hook out/hook.js and its full part out/hook-full.js, the SQLite wasm), for
 * the benches that start it as processes.
 */
export async function buildAgentkeep(root: string): Promise<void> {
  const { build } = await import('esbuild');
  const { copyFileSync, chmodSync } = await import('node:fs');
  const path = await import('node:path');
  const common = {
    absWorkingDir: root,
    bundle: true,
    platform: 'node' as const,
    target: 'node20',
    format: 'cjs' as const,
    mainFields: ['module', 'main'],
    logLevel: 'error' as const,
    external: ['cpu-features', '*.node', '@energetic-ai/*'], // as esbuild.mjs (native parts; the lint's lazy sentence encoder)
  };
  const banner = { js: '#!/usr/bin/env node' };
  await Promise.all([
    build({ ...common, entryPoints: ['sidecar/bin.ts'], outfile: 'out/sidecar.js', minify: true, banner }),
    build({ ...common, entryPoints: ['sidecar/main.ts'], outfile: 'out/cli.js' }),
    build({ ...common, entryPoints: ['sidecar/hooks/entry.ts'], outfile: 'out/hook.js', minify: true, banner }),
    build({ ...common, entryPoints: ['sidecar/hooks/run.ts'], outfile: 'out/hook-full.js' }),
  ]);
  chmodSync(path.join(root, 'out/sidecar.js'), 0o755);
  chmodSync(path.join(root, 'out/hook.js'), 0o755);
  copyFileSync(
    path.join(root, 'node_modules/node-sqlite3-wasm/dist/node-sqlite3-wasm.wasm'),
    path.join(root, 'out/node-sqlite3-wasm.wasm'),
  );
}
