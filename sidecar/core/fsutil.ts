/**
 * Small file-system helpers for the sidecar's own state: atomic writes (temp file in the same
 * directory + fsync + rename + fsync of the directory), JSON read/write, unique short temp names,
 * and the errors for a full file system (DiskFull, naming its mount point and free bytes) and for
 * names or paths the kernel refuses as too long.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsync as fsyncCb,
  openSync,
  promises as fs,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { formatBytes } from '../protocol/format';
import { AgentKeepError } from './errors';

/** Longest path the kernel takes in one system call, in bytes without the final NUL (Linux PATH_MAX 4096). */
export const PATH_MAX_BYTES = 4095;
/** Longest name of one path component, in bytes (Linux NAME_MAX). */
export const NAME_MAX_BYTES = 255;

/**
 * A temp name for writing `file` atomically: `.ak-tmp-<12 hex>` (20 bytes, hidden) in the same
 * directory, so the final rename is atomic and the name fits whatever the length of `file`'s own
 * name (1..255 bytes). When that path would be longer than PATH_MAX (a short name at the bottom of
 * a very deep tree), the temp goes into the deepest ancestor where it fits, not above `root` (the
 * target or store root; rename(2) is atomic across directories of one file system).
 * @throws AgentKeepError FileError when no directory down to `root` can hold it (the path itself is too long).
 */
export function tempNameFor(file: string, root?: string): string {
  const name = `.ak-tmp-${randomBytes(6).toString('hex')}`;
  let dir = path.dirname(file);
  for (;;) {
    const p = path.join(dir, name);
    if (Buffer.byteLength(p) <= PATH_MAX_BYTES) return p;
    const up = path.dirname(dir);
    if (up === dir || (root !== undefined && !(dir.length > root.length && dir.startsWith(root)))) break;
    dir = up;
  }
  throw nameTooLongError(file);
}

/**
 * Base names of our temp files: `.ak-tmp-<12 hex>` (tempNameFor), and `.<name>.ak-tmp-<12 hex>`
 * of older versions (still recognised, so their leftovers are never captured and are swept).
 */
export const TEMP_NAME_PATTERN = /^(?:\.ak-tmp-[0-9a-f]{12}|\..+\.ak-tmp-[0-9a-f]{12})$/s;

/** Whether a base name is one of our temp names (tempNameFor; left over by a crash or an interrupt). */
export function isTempName(name: string): boolean {
  return TEMP_NAME_PATTERN.test(name);
}

/** Shorten a long path for a message: its first and last 120 characters around an ellipsis. */
export function shortPath(p: string): string {
  return p.length <= 300 ? p : `${p.slice(0, 120)}…(${Buffer.byteLength(p)} bytes)…${p.slice(-120)}`;
}

/**
 * The error for a path the kernel refuses as too long (ENAMETOOLONG): a name over 255 bytes, or a
 * whole path over PATH_MAX (4095 bytes). Names which of the two, never a permissions hint.
 */
export function nameTooLongError(p: string, what = 'Cannot use'): AgentKeepError {
  const longest = p.split('/').reduce((m, n) => Math.max(m, Buffer.byteLength(n)), 0);
  const bytes = Buffer.byteLength(p);
  const why =
    longest > NAME_MAX_BYTES
      ? `a name in it is ${longest} bytes, longer than the ${NAME_MAX_BYTES} bytes a file name may have`
      : `the path is ${bytes} bytes, longer than the ${PATH_MAX_BYTES + 1} bytes (PATH_MAX, with its final NUL) the system takes`;
  return new AgentKeepError(
    'FileError',
    `${what} ${shortPath(p)}: name too long (${why}).`,
    'Shorten that name or move the file to a shallower folder (e.g. rename a long parent folder), then try again.',
  );
}

/** Facts about the file system holding `p`, for messages: mount point, type, free and total bytes. */
export interface FsFacts {
  mount: string;
  fstype: string;
  /** Bytes available to unprivileged users (statfs f_bavail * f_bsize). */
  freeBytes: number;
  totalBytes: number;
}

/** Unescape a field of /proc/self/mountinfo (octal escapes such as \040 for a space). */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * The file system holding `p` (or its nearest existing ancestor): the longest mount point of
 * /proc/self/mountinfo above its real path, and statfs figures. Best effort: `mount` falls back to
 * "?" where /proc is not readable.
 */
export async function fsFacts(p: string): Promise<FsFacts | undefined> {
  let cur = path.resolve(p);
  for (;;) {
    try {
      cur = await fs.realpath(cur);
      break;
    } catch {
      const up = path.dirname(cur);
      if (up === cur) return undefined;
      cur = up;
    }
  }
  let mount = '?';
  let fstype = '?';
  try {
    for (const line of (await fs.readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
      const f = line.split(' ');
      const sep = f.indexOf('-');
      if (f.length < 5 || sep < 0) continue;
      const mp = unescapeMount(f[4]);
      if (
        (cur === mp || cur.startsWith(mp.endsWith('/') ? mp : mp + '/')) &&
        (mount === '?' || mp.length >= mount.length)
      ) {
        mount = mp;
        fstype = f[sep + 1] ?? '?';
      }
    }
  } catch {
    /* no /proc: mount point unknown */
  }
  try {
    const st = await fs.statfs(cur);
    return { mount, fstype, freeBytes: st.bavail * st.bsize, totalBytes: st.blocks * st.bsize };
  } catch {
    return { mount, fstype, freeBytes: NaN, totalBytes: NaN };
  }
}

/** Bytes in binary units for messages (sidecar/protocol/format.ts formatBytes; "? bytes" when unknown). */
export function bytesText(n: number): string {
  return Number.isFinite(n) ? formatBytes(n) : '? bytes';
}

/**
 * The error for a full file system (ENOSPC, or EDQUOT: the user's quota) while writing `p`: names
 * the mount point, its type and what is left (e.g. "/mnt/state (tmpfs) is full: 0 bytes free of
 * 50 MiB"), and the fix. `hint` overrides the generic fix (the core adds the prune command).
 * @param what what was being written, e.g. "Cannot store the restore point in /s/objects"
 */
export async function diskFullError(p: string, e: unknown, what: string, hint?: string): Promise<AgentKeepError> {
  const f = await fsFacts(p);
  const quota = isErrno(e, 'EDQUOT');
  const where = f ? `${f.mount} (${f.fstype})` : 'its file system';
  const state = quota ? `your disk quota on ${where} is used up` : `the file system ${where} is full`;
  const left = f ? `: ${bytesText(f.freeBytes)} free of ${bytesText(f.totalBytes)}` : '';
  return new AgentKeepError(
    'DiskFull',
    `${what}: ${state}${left}.`,
    hint ??
      `Free space on ${f?.mount ?? 'that file system'} (delete or prune restore points: agentkeep restore-point prune), or move the state dir to a larger file system (--state-dir / AGENTKEEP_STATE_DIR).`,
  );
}

/** Whether an error means "no space left": ENOSPC, or EDQUOT (quota). */
export function isNoSpace(e: unknown): boolean {
  return isErrno(e, 'ENOSPC', 'EDQUOT') || (e instanceof AgentKeepError && e.kind === 'DiskFull');
}

/** fsync(2) of an open descriptor off the main thread: one thread-pool round trip. */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsyncCb(fd, (e) => (e ? reject(e) : resolve())));
}

/**
 * fsync a file by its path (its data and inode on disk; open read-only, which fsync(2) allows).
 * @throws the open's or the fsync's error (EIO, ENOENT ...)
 */
export async function fsyncFile(file: string): Promise<void> {
  const fd = openSync(file, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * fsync a directory so a rename inside it is durable (ignored where the platform refuses). The open
 * and close are synchronous (cheaper than a thread-pool round trip each); the fsync is not.
 */
export async function fsyncDir(dir: string): Promise<void> {
  let fd = -1;
  try {
    fd = openSync(dir, 'r');
    await fsyncFd(fd);
  } catch {
    /* some file systems do not allow fsync on directories */
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/** Data up to this many bytes (or string characters) is written by writeFileAtomic with synchronous calls but the fsyncs. */
const SMALL_ATOMIC = 64 * 1024;

/**
 * Write `data` to `file` atomically: temp file in the same directory, optional fsync, rename over
 * `file`, optional fsync of the directory. The temp file is removed on failure.
 * @param opts.mode file mode of the result (default 0o600: the state dir's files are the owner's alone)
 * @param opts.durable fsync file and directory (default true)
 * @param opts.syncDir fsync the directory after the rename (default `durable`); false with durable:
 *   the content is on disk before the rename, so a crash leaves the old or the new file, complete,
 *   but the rename itself may be lost (for a file whose old version is as valid)
 * @param opts.beforeRename awaited after the temp file is written (and synced), before the rename:
 *   what must be durable before `file` may name the new content (e.g. the files it refers to)
 * @throws AgentKeepError DiskFull (ENOSPC/EDQUOT, naming the file system), else what fs throws
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: { mode?: number; durable?: boolean; syncDir?: boolean; beforeRename?: () => Promise<void> } = {},
): Promise<void> {
  const tmp = tempNameFor(file);
  const durable = opts.durable ?? true;
  if ((typeof data === 'string' ? data.length : data.byteLength) <= SMALL_ATOMIC) {
    // a small file (a journal entry, a status, a marker): open, write, close and rename are
    // synchronous calls (each async one is a thread-pool round trip), the fsyncs stay async; same
    // steps in the same order as below
    let fd = -1;
    try {
      fd = openSync(tmp, 'wx', opts.mode ?? 0o600);
      writeFileSync(fd, data);
      if (durable) await fsyncFd(fd);
      closeSync(fd);
      fd = -1;
      await opts.beforeRename?.();
      renameSync(tmp, file);
    } catch (e) {
      if (fd >= 0)
        try {
          closeSync(fd);
        } catch {
          // closed or not, the temp file goes next
        }
      try {
        rmSync(tmp, { force: true });
      } catch {
        // best effort, as below
      }
      if (isNoSpace(e) && !(e instanceof AgentKeepError)) throw await diskFullError(file, e, `Cannot write ${file}`);
      throw e;
    }
    if (opts.syncDir ?? durable) await fsyncDir(path.dirname(file));
    return;
  }
  let h: fs.FileHandle | undefined;
  try {
    h = await fs.open(tmp, 'wx', opts.mode ?? 0o600);
    await h.writeFile(data);
    if (durable) await h.sync();
    await h.close();
    h = undefined;
    await opts.beforeRename?.();
    await fs.rename(tmp, file);
  } catch (e) {
    await h?.close().catch(() => undefined);
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    if (isNoSpace(e) && !(e instanceof AgentKeepError)) throw await diskFullError(file, e, `Cannot write ${file}`);
    throw e;
  }
  if (opts.syncDir ?? durable) await fsyncDir(path.dirname(file));
}

/** JSON.stringify + writeFileAtomic (pretty-printed when `pretty`; other options: writeFileAtomic's). */
export async function writeJsonAtomic(
  file: string,
  value: unknown,
  opts: { pretty?: boolean } & Parameters<typeof writeFileAtomic>[2] = {},
): Promise<void> {
  const { pretty, ...rest } = opts;
  const text = pretty === false ? JSON.stringify(value) : JSON.stringify(value, null, 2) + '\n';
  await writeFileAtomic(file, text, rest);
}

/** Read and parse a JSON file; `undefined` when it does not exist. Other errors are thrown. */
export async function readJsonIfExists<T>(file: string): Promise<T | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  return JSON.parse(text) as T;
}

/**
 * What is at `p` (symlinks followed), for errors about a path that should be a unix socket: "socket",
 * "regular file", "directory", "special file", or "missing file" when nothing is there. Linux answers
 * ECONNREFUSED for a connect to a regular file as for a socket nobody listens on, so an error must ask.
 */
export function fileKindAt(p: string): string {
  try {
    const st = statSync(p);
    return st.isSocket() ? 'socket' : st.isFile() ? 'regular file' : st.isDirectory() ? 'directory' : 'special file';
  } catch {
    return 'missing file';
  }
}

/** Whether an errno-style error has one of `codes`. */
export function isErrno(e: unknown, ...codes: string[]): boolean {
  return typeof e === 'object' && e !== null && codes.includes((e as NodeJS.ErrnoException).code ?? '');
}

/**
 * Run `fn` over `items` with at most `limit` promises in flight; results in input order. After the
 * first failure no new item is started, and the call settles only once the calls in flight have
 * settled (so a caller's cleanup never races a call still writing); then the first error is thrown.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failed: { e: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i], i);
      } catch (e) {
        failed ??= { e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw failed.e;
  return out;
}

/**
 * The error for an operation stopped by an AbortSignal (Ctrl+C / SIGTERM in the CLI).
 * @param what what was stopped and what that means for the target, e.g. "nothing in the target was changed"
 */
export function abortedError(what: string): AgentKeepError {
  return new AgentKeepError('Internal', `Interrupted: ${what}.`);
}

/** Throw abortedError(what) when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw abortedError(what);
}

/** Whether an error is the one abortedError makes. */
export function isAbortedError(e: unknown): boolean {
  return e instanceof AgentKeepError && e.message.startsWith('Interrupted: ');
}
