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
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { localTransport, type FileTransport, type RunningCommand } from '../transport';

/** A held lock; release() is idempotent. */
export interface HermesLock {
  /** Whether a real flock is held (false: `flock` program missing, see the module doc). */
  held: boolean;
  release(): Promise<void>;
}

/** Default wait for the lock, in seconds. */
export const LOCK_WAIT_S = 10;

/**
 * Take the exclusive flock Hermes uses on `lockFile` (created when missing, as Hermes does), on the
 * machine of `io`: the same `flock ... sh -c 'echo locked; read _'` holder, a child process here or a
 * command over SSH (exec) there. Over SSH the lock lives as long as that command: closing its stdin
 * releases it, and a dropped connection ends the command, so the lock never outlives AgentKeep.
 * @throws AgentKeepError TargetBusy when another holder (Hermes mid-write) keeps it for `waitS` seconds;
 *   FileError when the lock file cannot be opened; Unsupported when the other machine has no `flock`
 *   (nothing is written there without Hermes' lock)
 */
export async function lockHermesFile(
  lockFile: string,
  waitS = LOCK_WAIT_S,
  io: FileTransport = localTransport,
): Promise<HermesLock> {
  const shown = io.display(lockFile);
  try {
    await io.touch(lockFile); // Hermes opens it the same way; it stays empty
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      const dir = path.posix.dirname(lockFile);
      const on = io.remote ? ` on ${io.where}` : '';
      // root is refused only by an immutable (or append-only) file or folder, or a security policy
      const root = io.remote ? io.user === 'root' : process.getuid?.() === 0;
      const ssh = shown.startsWith('ssh://');
      const why =
        code === 'EROFS'
          ? 'the file system is read-only'
          : root
            ? `${io.remote ? io.user : 'root'} may not open it: the file or ${dir} is immutable or append-only (chattr), or a security policy (SELinux, AppArmor) refuses it`
            : `permission denied (${dir} is not writable for ${io.remote ? io.user : 'this user'}${on})`;
      const where = ssh || !io.remote ? on : ' in the guest';
      throw new AgentKeepError(
        'FileError',
        `Cannot open Hermes' memory lock ${shown}: ${why}. Nothing was changed.`,
        code === 'EROFS'
          ? `Remount ${dir}${where} read-write to edit the memory from AgentKeep.`
          : root
            ? `${where ? `${where.trim().replace(/^./, (c) => c.toUpperCase())}, look` : 'Look'} at the flags with lsattr ${lockFile} ${dir} and clear them (chattr -i ${lockFile}); if none is set, a security policy refuses it: see its audit log.`
            : `Run AgentKeep as the user Hermes runs as${ssh ? ' (the user in the ssh:// store string)' : ''}, or give this user write access to ${dir}${on} (e.g. chmod u+w ${dir}).`,
      );
    }
    throw e;
  }
  let cmd: RunningCommand;
  try {
    cmd = await io.spawn(['flock', '-x', '-w', String(waitS), lockFile, 'sh', '-c', 'echo locked; read _']);
  } catch (e) {
    // no flock program here: see the module doc (the compare-and-swap is the only guard)
    if (!io.remote && (e as NodeJS.ErrnoException).code === 'ENOENT') {
      return { held: false, release: async () => undefined };
    }
    throw e;
  }
  return new Promise<HermesLock>((resolve, reject) => {
    let out = '';
    let settled = false;
    cmd.onStdout((d: Buffer) => {
      out += d.toString();
      if (!settled && out.includes('locked')) {
        settled = true;
        let released = false;
        resolve({
          held: true,
          release: async () => {
            if (released) return;
            released = true;
            cmd.endStdin();
            await cmd.exited;
          },
        });
      }
    });
    void cmd.exited.then((code) => {
      if (settled) return;
      settled = true;
      if (io.remote && code === 127) {
        reject(
          new AgentKeepError(
            'Unsupported',
            `${io.where} has no flock program, so AgentKeep cannot take Hermes' memory lock ${shown} there. ` +
              'Nothing was changed.',
            'Install util-linux on that machine (Debian/Ubuntu: apt-get install util-linux; Alpine: apk add ' +
              'util-linux), then try again.',
          ),
        );
        return;
      }
      void lockHolder(lockFile, io).then((holder) =>
        reject(
          new AgentKeepError(
            'TargetBusy',
            `${holder ? `Process ${holder}` : 'Hermes'} holds the memory lock ${shown} (waited ${waitS} s${code === 1 ? '' : `, flock exited ${code}`}${io.remote ? ` on ${io.where}` : ''}).`,
            'Hermes is writing its memory right now; try again in a moment. Nothing was changed.',
          ),
        ),
      );
    });
  });
}

/** Parse /proc/locks for a FLOCK on inode `ino`: the holder's pid. */
function flockPid(locks: string, ino: number): string | undefined {
  for (const line of locks.split('\n')) {
    const m = /^\d+:\s+FLOCK\s+\S+\s+\S+\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
    if (m && Number(m[2]) === ino) return m[1];
  }
  return undefined;
}

/** `4711 (python3 hermes ...)` from a pid and its NUL-separated command line. */
function describeHolder(pid: string, cmdline: string): string {
  const words = cmdline.split('\0').filter(Boolean).join(' ').replace(/\s+/g, ' ').slice(0, 80);
  return words ? `${pid} (${words})` : pid;
}

/**
 * Who holds a flock on `file`, from /proc/locks (Linux: `<n>: FLOCK ADVISORY WRITE <pid>
 * <maj>:<min>:<inode> 0 EOF`) matched by inode, with the holder's command line from
 * /proc/<pid>/cmdline: e.g. `4711 (python3 hermes ...)`, on the machine of `io` (over SSH: read with
 * stat and cat there). Undefined where /proc is missing or no holder is listed.
 */
export async function lockHolder(file: string, io: FileTransport = localTransport): Promise<string | undefined> {
  try {
    if (io.remote) {
      const r = await io.exec(['sh', '-c', 'stat -L -c %i -- "$1" && cat /proc/locks', 'sh', file]);
      if (r.code !== 0) return undefined;
      const [first, ...rest] = r.stdout.toString('utf8').split('\n');
      const pid = flockPid(rest.join('\n'), Number(first));
      if (!pid) return undefined;
      const cmd = await io.exec(['cat', `/proc/${pid}/cmdline`]);
      return describeHolder(pid, cmd.code === 0 ? cmd.stdout.toString('utf8') : '');
    }
    const st = await fs.stat(file);
    const pid = flockPid(await fs.readFile('/proc/locks', 'utf8'), st.ino);
    if (!pid) return undefined;
    return describeHolder(pid, await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''));
  } catch {
    /* no /proc or no lock file */
  }
  return undefined;
}
