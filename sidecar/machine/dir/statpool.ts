/**
 * Parallel lstat for large trees: a small pool of worker threads (inline code, so it works both
 * from the TypeScript sources and from the esbuild bundle) lstat slices of a path list while the main
 * thread does its own slice. Results come back as a transferred Float64Array (no per-entry cloning).
 * Workers are created on first use, kept for later scans, and never keep the process alive.
 * AGENTKEEP_STAT_WORKERS=0 (or false, off, no) turns the workers off (everything on the main thread),
 * 1 (true, on, yes) on; any other value warns once on stderr and is the default: on, except in a
 * process that called `preferMainThreadStat()` (the launcher's one-shot slim create, which does not
 * call it for such a value, so its warning and walk are the full CLI's;
 * sidecar/createMain.ts: a worker is a second V8 isolate, ~19 MiB of a 100,000-file create's peak
 * memory, for a walk that measured no faster with it on the shared 2-vCPU machine; BENCHMARKS.md
 * "Slim create"). The servers (`serve`, `mcp`) and the full CLI keep the workers.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { Worker } from 'node:worker_threads';
import { envSwitch } from '../../core/envWarn';

/** Numbers per path in a result: mode, size, mtimeMs, ctimeMs, ino, status (0 ok, 1 missing, 2 error), nlink. */
export const STAT_FIELDS = 7;

const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
parentPort.on('message', ({ id, joined, n, base }) => {
  const out = new Float64Array(n * ${STAT_FIELDS});
  let at = 0;
  for (let i = 0; i < n; i++) {
    const o = i * ${STAT_FIELDS};
    let end = joined.indexOf('\\0', at);
    if (end < 0) end = joined.length;
    const p = joined.slice(at, end);
    at = end + 1;
    let st;
    try { st = fs.lstatSync(base === undefined ? p : base + '/' + p, { throwIfNoEntry: false }); } catch { out[o + 5] = 2; continue; }
    if (!st) { out[o + 5] = 1; continue; }
    out[o] = st.mode; out[o + 1] = st.size; out[o + 2] = st.mtimeMs; out[o + 3] = st.ctimeMs; out[o + 4] = st.ino; out[o + 6] = st.nlink;
  }
  parentPort.postMessage({ id, out }, [out.buffer]);
});
`;

/** Whether the workers are on when AGENTKEEP_STAT_WORKERS is unset (see the module doc). */
let workersByDefault = true;

/**
 * Make this process lstat on its main thread unless AGENTKEEP_STAT_WORKERS turns the workers on: for
 * one-shot processes, where the second isolate's memory costs more than the parallel walk gains.
 */
export function preferMainThreadStat(): void {
  workersByDefault = false;
}

/**
 * Whether this process's lstat may use the stat workers (AGENTKEEP_STAT_WORKERS, else the default:
 * on unless preferMainThreadStat was called). A one-shot dir create streams its walk, on the main
 * thread, only when they are off (dir/index.ts streamedCreates).
 */
export function statWorkersOn(): boolean {
  return envSwitch(process.env, 'AGENTKEEP_STAT_WORKERS', workersByDefault, 'the stat workers');
}

/** Below this many paths the main thread does everything (a worker round trip would cost more). */
export const PARALLEL_MIN = 4000;

interface PoolWorker {
  w: Worker;
  pending: Map<number, { resolve: (a: Float64Array) => void; reject: (e: Error) => void }>;
}

let pool: PoolWorker[] | undefined;
let nextId = 1;

function workers(): PoolWorker[] {
  if (pool) return pool;
  const n = Math.max(1, Math.min(3, (os.availableParallelism?.() ?? os.cpus().length) - 1));
  pool = [];
  for (let i = 0; i < n; i++) {
    // a small young generation: the worker allocates only short-lived Stats objects, and its default
    // (up to 3 x 16 MiB) was about 10 MiB of a create's peak memory at 100,000 files (issue 14)
    const w = new Worker(WORKER_CODE, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 2 } });
    const pw: PoolWorker = { w, pending: new Map() };
    w.on('message', (m: { id: number; out: Float64Array }) => {
      const p = pw.pending.get(m.id);
      pw.pending.delete(m.id);
      p?.resolve(m.out);
    });
    const fail = (e: Error): void => {
      for (const p of pw.pending.values()) p.reject(e);
      pw.pending.clear();
      pool = undefined; // rebuild next time
    };
    w.on('error', fail);
    w.on('exit', () => fail(new Error('stat worker exited')));
    w.unref();
    pool.push(pw);
  }
  return pool;
}

/** lstat one slice on this thread into `out` at `offset` (in paths). */
function statSlice(paths: string[], from: number, to: number, out: Float64Array, base: string | undefined): void {
  for (let i = from; i < to; i++) {
    const o = i * STAT_FIELDS;
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(base === undefined ? paths[i] : base + '/' + paths[i], { throwIfNoEntry: false });
    } catch {
      out[o + 5] = 2;
      continue;
    }
    if (!st) {
      out[o + 5] = 1;
      continue;
    }
    out[o] = st.mode;
    out[o + 1] = st.size;
    out[o + 2] = st.mtimeMs;
    out[o + 3] = st.ctimeMs;
    out[o + 4] = st.ino;
    out[o + 6] = st.nlink;
  }
}

/**
 * lstat every path: absolute, or relative to `base` (an absolute directory; each path is then
 * `base + '/' + path`, made only for its lstat, so a caller need not hold the absolute paths of a
 * whole level of a large tree). Returns STAT_FIELDS numbers per path: mode, size, mtimeMs, ctimeMs,
 * ino, status (0 ok, 1 missing, 2 error: the caller lstats again to get the error), nlink.
 */
export async function lstatMany(paths: string[], base?: string): Promise<Float64Array> {
  const out = new Float64Array(paths.length * STAT_FIELDS);
  if (
    paths.length < PARALLEL_MIN ||
    !envSwitch(process.env, 'AGENTKEEP_STAT_WORKERS', workersByDefault, 'the stat workers')
  ) {
    statSlice(paths, 0, paths.length, out, base);
    return out;
  }
  let ws: PoolWorker[];
  try {
    ws = workers();
  } catch {
    statSlice(paths, 0, paths.length, out, base);
    return out;
  }
  const parts = ws.length + 1;
  const per = Math.ceil(paths.length / parts);
  const jobs = ws.map((pw, k) => {
    const from = (k + 1) * per;
    const to = Math.min(paths.length, from + per);
    const id = nextId++;
    return new Promise<void>((resolve, reject) => {
      if (from >= to) return resolve();
      // Keep the process alive only while this worker has work (a ref count via pending.size).
      if (pw.pending.size === 0) pw.w.ref();
      const settle = (): void => {
        if (pw.pending.size === 0) pw.w.unref();
      };
      pw.pending.set(id, {
        resolve: (a) => {
          out.set(a, from * STAT_FIELDS);
          settle();
          resolve();
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      // one string, not an array of strings: a cheap copy, and no array of paths kept in the worker's heap
      pw.w.postMessage({ id, joined: paths.slice(from, to).join('\0'), n: to - from, base });
    });
  });
  statSlice(paths, 0, Math.min(per, paths.length), out, base);
  try {
    await Promise.all(jobs);
  } catch {
    // A worker failed: do its part here.
    statSlice(paths, per, paths.length, out, base);
  }
  return out;
}
