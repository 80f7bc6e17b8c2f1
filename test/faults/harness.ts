/**
 * The fault-injection harness (`npm run test:faults`, issue 13): real CLI processes (out/sidecar.js)
 * killed with SIGKILL at random points, real small file systems, real odd names. Every case checks
 * byte for byte that nothing was lost: the state dir is consistent (every journal entry has its
 * manifest, every object a restore point names exists and hashes to its name), and restoring a
 * restore point into the tree gives back exactly the tree it was taken of (describeTree: types,
 * modes, sha256 of contents, link targets).
 *
 * Settings (environment): AK_FAULTS_N runs per kill case (default 30; CI runs 5), AK_FAULTS_SEED
 * the random seed (default: time; printed), AK_FAULTS_REPORT a JSON file the figures are appended to.
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SIDECAR } from '../unit/helpers/sidecar';

export { buildSidecar, runSidecar, SIDECAR } from '../unit/helpers/sidecar';
import { describeTree, pseudoRandom, put, tempSetup } from '../unit/dir-fixtures';
import { manifestObjects, packedObject } from '../unit/helpers/manifests';
export { describeTree, pseudoRandom, put, tempSetup };
export {
  orphanObjects,
  storedObjects,
  tempObjects,
  mountTmpfs,
  fillUp,
  AS_NOBODY,
  NOBODY,
} from '../unit/helpers/tmpfs';

/** Runs per kill case. */
export const N = Math.max(1, Number(process.env.AK_FAULTS_N ?? 30) || 30);

/** The seed of this run (printed, so a failing run can be repeated with AK_FAULTS_SEED). */
export const SEED = Number(process.env.AK_FAULTS_SEED ?? Date.now() % 1_000_000);

/** A small seeded PRNG (mulberry32): uniform in [0, 1). */
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

/** Append one case's figures to the report (AK_FAULTS_REPORT) and print them. */
export function report(name: string, figures: Record<string, unknown>): void {
  const line = { case: name, n: N, seed: SEED, ...figures };
  console.log(`      figures: ${JSON.stringify(line)}`);
  const f = process.env.AK_FAULTS_REPORT;
  if (f) fs.appendFileSync(f, JSON.stringify(line) + '\n');
}

/** Spawn `node out/sidecar.js ...args` (stdin closed). */
export function spawnSidecar(args: string[], prefix: string[] = []): ChildProcess {
  const [cmd, ...pre] = [...prefix, process.execPath];
  return spawn(cmd, [...pre, SIDECAR, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Run the CLI and SIGKILL it `delayMs` after the start. Resolves how it ended: `killed` (the signal
 * hit a running process) or `exited` with its code, plus its output.
 */
export async function runAndKill(
  args: string[],
  delayMs: number,
): Promise<{ killed: boolean; code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = Date.now();
  const child = spawnSidecar(args);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) =>
    child.on('exit', (c, sg) => r([c, sg])),
  );
  clearTimeout(timer);
  return { killed: signal === 'SIGKILL', code, stdout, stderr, ms: Date.now() - t0 };
}

/** Wall time of one uninterrupted run of the CLI (ms). */
export async function timeRun(args: string[]): Promise<number> {
  const r = await runAndKill(args, 600_000);
  assert.equal(r.code, 0, r.stderr);
  return r.ms;
}

function sha256File(p: string): string {
  return createHash('sha256').update(fs.readFileSync(p)).digest('hex');
}

/**
 * The state dir is consistent: every journal entry of every target parses and has its dir
 * manifest; every object a manifest (format 2: its trees and what they name) or agent capture names exists and hashes to its name (no torn
 * object). Returns the number of restore points checked.
 */
export function checkState(stateDir: string): number {
  let points = 0;
  const journal = path.join(stateDir, 'journal');
  const verified = new Set<string>();
  const object = (h: string, what: string): void => {
    if (verified.has(h)) return;
    const p = path.join(stateDir, 'objects', h.slice(0, 2), h);
    // a file of its own, or in a pack (a create storing many objects at once, sidecar/core/packs.ts)
    const packed = fs.existsSync(p) ? undefined : packedObject(stateDir, h);
    assert.ok(packed || fs.existsSync(p), `object ${h.slice(0, 12)} of ${what} is missing`);
    const got = packed ? createHash('sha256').update(packed).digest('hex') : sha256File(p);
    assert.equal(got, h, `object ${h.slice(0, 12)} of ${what} is torn`);
    verified.add(h);
  };
  for (const key of fs.existsSync(journal) ? fs.readdirSync(journal) : []) {
    for (const n of fs.readdirSync(path.join(journal, key))) {
      if (!n.endsWith('.json') || n.startsWith('.') || n === 'target.json') continue;
      const rp = JSON.parse(fs.readFileSync(path.join(journal, key, n), 'utf8')) as {
        id: string;
        machine: { backend: string };
        agent: Array<{ files: Array<{ hash: string }> }>;
      };
      points++;
      if (rp.machine.backend === 'dir') {
        const mf = path.join(stateDir, 'dir', key, `${rp.id}.json`);
        assert.ok(fs.existsSync(mf), `manifest of ${rp.id} is missing`);
        for (const o of manifestObjects(stateDir, mf)) object(o.hash, `${rp.id}:${o.what}`);
      }
      for (const a of rp.agent) for (const f of a.files) object(f.hash, `${rp.id} agent state`);
    }
  }
  return points;
}

/** Bytes-identical trees (describeTree maps), with a readable first difference. */
export function assertSameTree(actual: Record<string, unknown>, expected: Record<string, unknown>, what: string): void {
  const keys = new Set([...Object.keys(actual), ...Object.keys(expected)]);
  for (const k of [...keys].sort()) {
    const a = JSON.stringify(actual[k]);
    const e = JSON.stringify(expected[k]);
    if (a !== e) assert.fail(`${what}: ${JSON.stringify(k)} is ${a ?? 'missing'}, expected ${e ?? 'missing'}`);
  }
}

/** An agent-like tree: ~200 small files in nested folders, 10 of 128 KiB, 2 of 2 MiB (the copy path), symlinks, modes. */
export function makeTree(root: string, seed: number): void {
  for (let i = 0; i < 200; i++)
    put(root, `src/m${i % 12}/file-${i}.txt`, `module ${i} seed ${seed}\n`.repeat(1 + (i % 7)));
  for (let i = 0; i < 10; i++) put(root, `data/blob-${i}.bin`, pseudoRandom(128 * 1024, seed * 31 + i));
  for (let i = 0; i < 2; i++) put(root, `models/big-${i}.bin`, pseudoRandom(2 * 1024 * 1024, seed * 17 + i));
  put(root, '.env', `KEY=secret-${seed}\n`, 0o600);
  put(root, 'bin/run.sh', '#!/bin/sh\necho run\n', 0o755);
  fs.mkdirSync(path.join(root, 'empty-dir'), { recursive: true });
  if (!fs.existsSync(path.join(root, 'link-to-src'))) fs.symlinkSync('src/m1', path.join(root, 'link-to-src'));
}

/** Change the tree the way an agent run does: edit, add and delete a few files (deterministic for `r`). */
export function mutateTree(root: string, r: () => number, step: number): void {
  for (let k = 0; k < 5; k++) {
    const i = Math.floor(r() * 200);
    const f = path.join(root, `src/m${i % 12}/file-${i}.txt`);
    if (r() < 0.3) fs.rmSync(f, { force: true });
    else put(root, `src/m${i % 12}/file-${i}.txt`, `edited at step ${step} (${k})\n`);
  }
  put(root, `data/new-${step}.bin`, pseudoRandom(64 * 1024 + Math.floor(r() * 300 * 1024), step + 1000));
  const b = Math.floor(r() * 2);
  if (r() < 0.5) put(root, `models/big-${b}.bin`, pseudoRandom(2 * 1024 * 1024, step * 7 + 3));
  if (r() < 0.3) fs.chmodSync(path.join(root, 'bin/run.sh'), r() < 0.5 ? 0o700 : 0o755);
}
