/**
 * The lock Hermes takes around every read-modify-write of a memory file: an exclusive
 * `fcntl.flock` on `memories/MEMORY.md.lock` / `USER.md.lock` (NousResearch/hermes-agent
 * tools/memory_tool.py; shared/reference/memory-stores.md §1.2). Node has no flock(2) and the
 * sidecar has no native modules, so the lock is held by a child process: util-linux `flock -x -w S
 * FILE sh -c 'echo locked; read _'` takes the real flock, prints "locked", and keeps it until we close
 * its stdin (or we die: the pipe closes, the child exits, the kernel drops the lock). Hermes' own
 * `flock` calls therefore wait for us, and we wait for them.
 *
 * Limits: needs the `flock` program (util-linux; on every Debian/Ubuntu/Fedora). Where it is missing
 * (macOS, busybox without flock) the lock is NOT taken (Hermes would not see an O_EXCL file anyway);
 * the compare-and-swap on the file's sha256 right before the rename is then the only guard, and the
 * result says so (`held: false`). Windows (msvcrt.locking) is not supported.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';

/** A held lock; release() is idempotent. */
export interface HermesLock {
  /** Whether a real flock is held (false: `flock` program missing, see the module doc). */
  held: boolean;
  release(): Promise<void>;
}

/** Default wait for the lock, in seconds. */
export const LOCK_WAIT_S = 10;

/**
 * Take the exclusive flock Hermes uses on `lockFile` (created when missing, as Hermes does).
 * @throws AgentKeepError TargetBusy when another holder (Hermes mid-write) keeps it for `waitS` seconds
 */
export async function lockHermesFile(lockFile: string, waitS = LOCK_WAIT_S): Promise<HermesLock> {
  try {
    const fh = await fs.open(lockFile, 'a'); // Hermes opens it the same way; it stays empty
    await fh.close();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      const dir = path.dirname(lockFile);
      throw new AgentKeepError(
        'FileError',
        `Cannot open Hermes' memory lock ${lockFile}: ${code === 'EROFS' ? 'the file system is read-only' : `permission denied (${dir} is not writable for this user)`}. Nothing was changed.`,
        code === 'EROFS'
          ? `Remount ${dir} read-write to edit the memory from AgentKeep.`
          : `Run AgentKeep as the user Hermes runs as, or give this user write access to ${dir} (e.g. chmod u+w ${dir}).`,
      );
    }
    throw e;
  }
  return new Promise<HermesLock>((resolve, reject) => {
    let child;
    try {
      child = spawn('flock', ['-x', '-w', String(waitS), lockFile, 'sh', '-c', 'echo locked; read _'], { stdio: ['pipe', 'pipe', 'ignore'] });
    } catch {
      resolve({ held: false, release: async () => undefined });
      return;
    }
    child.stdin.on('error', () => undefined); // EPIPE when flock already exited: the lock is gone either way
    let out = '';
    let settled = false;
    const exited = new Promise<void>((r) => child.once('close', () => r()));
    child.once('error', (e: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      if (e.code === 'ENOENT') resolve({ held: false, release: async () => undefined });
      else reject(e);
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!settled && out.includes('locked')) {
        settled = true;
        let released = false;
        resolve({
          held: true,
          release: async () => {
            if (released) return;
            released = true;
            child.stdin.end();
            await exited;
          },
        });
      }
    });
    child.once('close', (code: number | null) => {
      if (settled) return;
      settled = true;
      void lockHolder(lockFile).then((holder) =>
        reject(
          new AgentKeepError(
            'TargetBusy',
            `${holder ? `Process ${holder}` : 'Hermes'} holds the memory lock ${lockFile} (waited ${waitS} s${code === 1 ? '' : `, flock exited ${code}`}).`,
            'Hermes is writing its memory right now; try again in a moment. Nothing was changed.',
          ),
        ),
      );
    });
  });
}

/**
 * Who holds a flock on `file`, from /proc/locks (Linux: `<n>: FLOCK ADVISORY WRITE <pid>
 * <maj>:<min>:<inode> 0 EOF`) matched by inode, with the holder's command line from
 * /proc/<pid>/cmdline: e.g. `4711 (python3 hermes ...)`. Undefined where /proc is missing or no
 * holder is listed.
 */
export async function lockHolder(file: string): Promise<string | undefined> {
  try {
    const st = await fs.stat(file);
    const locks = await fs.readFile('/proc/locks', 'utf8');
    for (const line of locks.split('\n')) {
      const m = /^\d+:\s+FLOCK\s+\S+\s+\S+\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
      if (!m || Number(m[2]) !== st.ino) continue;
      const cmd = await fs.readFile(`/proc/${m[1]}/cmdline`, 'utf8').catch(() => '');
      const words = cmd.split('\0').filter(Boolean).join(' ').replace(/\s+/g, ' ').slice(0, 80);
      return words ? `${m[1]} (${words})` : m[1];
    }
  } catch {
    /* no /proc or no lock file */
  }
  return undefined;
}
