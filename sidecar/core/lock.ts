/**
 * Exclusive lock files. A lock is a file created with O_EXCL holding `{pid, host, time, op}`. A lock
 * whose holder is a dead process on this host is stale and is broken. Waiters poll until the lock is
 * free or the timeout passes, then fail with TargetBusy naming the holder.
 */
import { randomBytes } from 'node:crypto';
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from './errors';
import { isErrno, throwIfAborted } from './fsutil';
import { pidAlive } from './pid';

export { pidAlive };

/** Content of a lock file. */
export interface LockInfo {
  pid: number;
  host: string;
  /** ISO 8601 time the lock was taken. */
  time: string;
  /** What the holder is doing, e.g. "create restore point". */
  op: string;
  /** Random token, to tell our lock from a later one. */
  token: string;
}

async function readLock(file: string): Promise<LockInfo | undefined> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as LockInfo;
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return undefined;
    // Unparsable: a holder that died between create and write. Treat as stale if old enough.
    try {
      const st = await fs.stat(file);
      if (Date.now() - st.mtimeMs > 5000)
        return { pid: -1, host: os.hostname(), time: st.mtime.toISOString(), op: '?', token: '' };
    } catch {
      return undefined;
    }
    return { pid: process.pid, host: os.hostname(), time: new Date().toISOString(), op: 'starting', token: '' };
  }
}

/** The token of lock file `file` as it is now, read synchronously; undefined when gone or unparsable (never ours then). */
function tokenNow(file: string): string | undefined {
  try {
    return (JSON.parse(fsSync.readFileSync(file, 'utf8')) as LockInfo).token;
  } catch {
    return undefined;
  }
}

/** Whether a lock's holder is gone (same host, dead pid). Locks of other hosts are never stale. */
export function isStale(info: LockInfo): boolean {
  return info.host === os.hostname() && !pidAlive(info.pid);
}

/** Break a stale lock without ever removing a fresh one taken meanwhile by someone else. */
async function breakStale(file: string, seen: LockInfo): Promise<void> {
  const aside = `${file}.stale-${randomBytes(4).toString('hex')}`;
  try {
    await fs.rename(file, aside);
  } catch {
    return; // someone else broke or released it
  }
  const got = await readLock(aside);
  if (got && got.token !== seen.token) {
    // We moved a fresh lock: put it back unless yet another one exists (link fails then).
    await fs.link(aside, file).catch(() => undefined);
  }
  await fs.rm(aside, { force: true });
}

/** Describe a holder for messages: "pid 123 on host x since 2026-...: create restore point". */
export function describeHolder(info: LockInfo): string {
  return `process ${info.pid} on ${info.host} (${info.op}, since ${info.time})`;
}

/** A held lock; `release()` removes the lock file (only if it is still ours). */
export interface HeldLock {
  file: string;
  info: LockInfo;
  release(): Promise<void>;
}

/** Try once to take the lock. Returns the held lock, or the current holder's info. */
export async function tryLock(file: string, op: string): Promise<HeldLock | { holder: LockInfo }> {
  const info: LockInfo = {
    pid: process.pid,
    host: os.hostname(),
    time: new Date().toISOString(),
    op,
    token: randomBytes(8).toString('hex'),
  };
  // synchronous calls for the free lock (a tiny file): each async call is a thread-pool round trip
  fsSync.mkdirSync(path.dirname(file), { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fsSync.openSync(file, 'wx', 0o600);
      try {
        fsSync.writeFileSync(fd, JSON.stringify(info));
      } catch (e) {
        // (a full disk): never leave an empty lock file that others would wait on
        try {
          fsSync.closeSync(fd);
        } catch {
          // closed or not: the file goes next
        }
        try {
          fsSync.rmSync(file, { force: true });
        } catch {
          // the write's error is the one to report
        }
        throw e;
      }
      fsSync.closeSync(fd);
      return {
        file,
        info,
        release: async () => {
          if (tokenNow(file) === info.token) fsSync.rmSync(file, { force: true });
        },
      };
    } catch (e) {
      if (!isErrno(e, 'EEXIST')) throw e;
    }
    const holder = await readLock(file);
    if (!holder) continue; // released meanwhile: try again
    if (isStale(holder)) {
      await breakStale(file, holder);
      continue;
    }
    return { holder };
  }
  const holder = (await readLock(file)) ?? { pid: -1, host: '?', time: '?', op: '?', token: '' };
  return { holder };
}

/**
 * Take the lock `file`, waiting up to `timeoutMs` for another holder to release it.
 * @param what the locked thing for messages, e.g. "target dir:/x"
 * @param signal stops the wait (abortedError)
 * @throws AgentKeepError TargetBusy naming the holder when the timeout passes.
 */
export async function acquireLock(
  file: string,
  opts: { op: string; what: string; timeoutMs: number; pollMs?: number; signal?: AbortSignal },
): Promise<HeldLock> {
  const deadline = Date.now() + opts.timeoutMs;
  let delay = Math.min(opts.pollMs ?? 25, 200);
  for (;;) {
    throwIfAborted(opts.signal, `stopped while waiting for the lock of ${opts.what}; nothing was changed`);
    const r = await tryLock(file, opts.op);
    if ('release' in r) return r;
    if (Date.now() >= deadline) {
      throw new AgentKeepError(
        'TargetBusy',
        `${opts.what} is busy: ${describeHolder(r.holder)} holds its lock (waited ${Math.round(opts.timeoutMs / 1000)} s).`,
        `Wait for that operation to finish and try again; if process ${r.holder.pid} is gone, remove ${file}.`,
      );
    }
    await new Promise((res) => setTimeout(res, Math.min(delay, Math.max(1, deadline - Date.now()))));
    delay = Math.min(delay * 2, 200);
  }
}

/** Run `fn` while holding the lock `file` (see acquireLock); the lock is released afterwards. */
export async function withLock<T>(
  file: string,
  opts: { op: string; what: string; timeoutMs: number },
  fn: () => Promise<T>,
): Promise<T> {
  const lock = await acquireLock(file, opts);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}
