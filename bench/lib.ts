/** Helpers shared by the benchmarks in bench/. */
import { execSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

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
  fs.chmodSync(path.join(root, 'out/sidecar.js'), 0o755);
  fs.chmodSync(path.join(root, 'out/hook.js'), 0o755);
  fs.copyFileSync(
    path.join(root, 'node_modules/node-sqlite3-wasm/dist/node-sqlite3-wasm.wasm'),
    path.join(root, 'out/node-sqlite3-wasm.wasm'),
  );
}

/** The folder of file number `i` in generate()'s tree: 50 files per folder, 100 folders per package. */
export const dirOf = (i: number): string => `pkg${Math.floor(i / 5000)}/mod${Math.floor(i / 50) % 100}`;

/**
 * The benches' tree (bench/dir-speed.bench.ts, bench/hook-journal.bench.ts): write `n` small text
 * files (about 200 bytes each, 50 per directory, `pkgP/modM/fI.txt`), max(1, n/1000) binaries of
 * 2 MiB under `blobs/` and a symlink `link-to-mod0` under `root`. Deterministic (seeded with `n`).
 */
export function generate(root: string, n: number): void {
  const rand = rng(n);
  for (let i = 0; i < n; i++) {
    const d = path.join(root, dirOf(i));
    if (i % 50 === 0) fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, `f${i}.txt`), `${i} ${rand().toString(36).repeat(12)}\n`);
  }
  fs.mkdirSync(path.join(root, 'blobs'), { recursive: true });
  for (let i = 0; i < Math.max(1, Math.floor(n / 1000)); i++) {
    const b = Buffer.alloc(2 << 20);
    for (let k = 0; k < b.length; k += 4) b.writeUInt32LE((rand() * 2 ** 32) >>> 0, k);
    fs.writeFileSync(path.join(root, 'blobs', `blob${i}.bin`), b);
  }
  fs.symlinkSync('pkg0/mod0', path.join(root, 'link-to-mod0'));
}

/**
 * The small change of round `r` in a generate() tree of `n` files: edit 10 files, add 10, remove 10
 * (deterministic: the same in every copy).
 */
export function mutate(root: string, n: number, r: number): void {
  for (let k = 0; k < 10; k++) {
    const i = (r * 97 + k * 31) % n;
    const f = path.join(root, dirOf(i), `f${i}.txt`);
    if (fs.existsSync(f)) fs.appendFileSync(f, `changed in round ${r}\n`);
    fs.writeFileSync(path.join(root, dirOf((i * 7) % n), `new-${r}-${k}.txt`), `new ${r} ${k}\n`);
    const j = (i + 7) % n;
    fs.rmSync(path.join(root, dirOf(j), `f${j}.txt`), { force: true });
  }
}
