/**
 * The sidecar's state dir: where the journal, the object store, the dir-backend manifests and the
 * locks live. <targetKey> = first 16 hex chars of sha256("dir:" + realpath of the target directory).
 * Layout (all below the state dir):
 *   journal/<targetKey>/target.json        {target} of this journal
 *   journal/<targetKey>/<id>.json          one restore point (RestorePoint JSON)
 *   objects/<hh>/<sha256>                  content-addressed objects, shared by every target
 *   objects/pack/<32 hex>.pack             small objects of a create that stored many at once (packs.ts)
 *   objects/tmp/<pid>-<hex>                temp files of objects being written (swept when <pid> is dead or after 24 h)
 *   dir/<targetKey>/<snapshotId>.json      dir-backend manifests
 *   locks/<targetKey>.lock                 target lock (create/restore/delete)
 *   dir/<targetKey>/.index.json            objects all manifests of the target hold (usage; rebuilt when stale)
 *   journal/<targetKey>/.pairs.json        cache: pre/post pairs whose sides do not differ (retention)
 *   locks/gc.lock, locks/inflight/         garbage-collection handshake (sidecar/core/gc.ts)
 *   space-reserve                          64 KiB given back on a full file system so locks and GC still work
 *   guest-backups/<time>-<guest>-<name>    old content of a guest file, saved before guest write replaced it
 * The state dir is 0700 and owned by the user running the sidecar; objects are 0400, other files 0600.
 */
import { randomBytes } from 'node:crypto';
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from './errors';

/** Paths of the state dir. */
export class StateLayout {
  constructor(readonly root: string) {}
  get journalRoot(): string {
    return path.join(this.root, 'journal');
  }
  journalDir(key: string): string {
    return path.join(this.root, 'journal', key);
  }
  get objectsDir(): string {
    return path.join(this.root, 'objects');
  }
  get dirBackendRoot(): string {
    return path.join(this.root, 'dir');
  }
  get locksDir(): string {
    return path.join(this.root, 'locks');
  }
  targetLock(key: string): string {
    return path.join(this.root, 'locks', `${key}.lock`);
  }
  get gcLock(): string {
    return path.join(this.root, 'locks', 'gc.lock');
  }
  /** Where guest write keeps the old content of the files it replaces (mode 700, files 600). */
  get guestBackupsDir(): string {
    return path.join(this.root, 'guest-backups');
  }
  get inflightDir(): string {
    return path.join(this.root, 'locks', 'inflight');
  }
}

/**
 * The state dir to use: `explicit` (CoreOptions.stateDir / --state-dir), else AGENTKEEP_STATE_DIR,
 * else $XDG_STATE_HOME/agentkeep, else ~/.local/state/agentkeep. Always an absolute path.
 * @throws AgentKeepError BadStateDir for a relative explicit or environment path.
 */
export function resolveStateDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const pick = (p: string, from: string): string => {
    if (!path.isAbsolute(p)) {
      throw new AgentKeepError(
        'BadStateDir',
        `State dir "${p}" (from ${from}) is not an absolute path.`,
        'Give an absolute path, e.g. --state-dir /home/me/.local/state/agentkeep.',
      );
    }
    return path.resolve(p);
  };
  if (explicit) return pick(explicit, '--state-dir');
  if (env.AGENTKEEP_STATE_DIR) return pick(env.AGENTKEEP_STATE_DIR, 'AGENTKEEP_STATE_DIR');
  if (env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME)) return path.join(env.XDG_STATE_HOME, 'agentkeep');
  return path.join(os.homedir(), '.local', 'state', 'agentkeep');
}

/** realpath of `p`, or of its nearest existing ancestor joined with the rest (for paths not yet created). */
export async function realpathLoose(p: string): Promise<string> {
  const rest: string[] = [];
  let cur = path.resolve(p);
  for (;;) {
    try {
      // (synchronously: one realpath(3), cheaper than a thread-pool round trip; every operation resolves 2-3 paths)
      const real = fsSync.realpathSync.native(cur);
      return rest.length ? path.join(real, ...rest.reverse()) : real;
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return path.resolve(p);
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

/** Whether `child` is `parent` or lies below it (both absolute, normalised). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Refuse a state dir inside the target (a restore would roll back the journal itself) and a target
 * inside the state dir. Symlinks are resolved.
 * @throws AgentKeepError BadStateDir naming both paths, with a hint to move the state dir.
 */
export async function checkStateDirVsTarget(stateDir: string, targetPath: string): Promise<void> {
  const s = await realpathLoose(stateDir);
  const t = await realpathLoose(targetPath);
  if (isInside(s, t)) {
    throw new AgentKeepError(
      'BadStateDir',
      `The state dir ${stateDir} is inside the target ${targetPath}; a restore would roll back the restore points themselves.`,
      `Put the state dir outside the target: --state-dir ${path.join(os.homedir(), '.local', 'state', 'agentkeep')} (or AGENTKEEP_STATE_DIR).`,
    );
  }
  if (isInside(t, s)) {
    throw new AgentKeepError(
      'BadStateDir',
      `The target ${targetPath} is inside the state dir ${stateDir}.`,
      'Pick a target outside the state dir, or move the state dir with --state-dir / AGENTKEEP_STATE_DIR.',
    );
  }
}

/** Size of the space reserve in bytes (sidecar/core/gc.ts withRoom gives it back on a full file system). */
export const RESERVE_BYTES = 64 * 1024;
/** The reserve is written again only when this much is free (it never takes the last bytes, but comes back soon after a recovery). */
const RESERVE_MIN_FREE = 2 * RESERVE_BYTES;

/** Path of the space reserve. */
export function reservePath(layout: StateLayout): string {
  return path.join(layout.root, 'space-reserve');
}

/** Give the space reserve back to the file system. @returns whether there was one to give. */
export async function releaseReserve(layout: StateLayout): Promise<boolean> {
  try {
    await fs.rm(reservePath(layout));
    return true;
  } catch {
    return false;
  }
}

/** Write the space reserve when it is missing and the file system has room to spare (best effort). */
export async function ensureReserve(layout: StateLayout): Promise<void> {
  const p = reservePath(layout);
  try {
    if (fsSync.lstatSync(p, { throwIfNoEntry: false })) return; // (one lstat(2), synchronously: it is there as a rule)
  } catch {
    /* unreadable: tried below, as when missing */
  }
  try {
    const st = await fs.statfs(layout.root);
    if (st.bavail * st.bsize < RESERVE_MIN_FREE) return;
    // random bytes: zeros could be stored sparse or compressed and reserve nothing
    await fs.writeFile(p, randomBytes(RESERVE_BYTES), { flag: 'wx', mode: 0o600 });
  } catch {
    await fs.rm(p, { force: true }).catch(() => undefined);
  }
}

/**
 * The first path from the root down to `dir` that exists and is not a directory (mkdir's EEXIST or
 * ENOTDIR; ENOENT: a dangling symbolic link), with what it is ("is a file, not a directory", "is a
 * symbolic link to /x, which does not exist"); undefined when none is.
 */
async function notADirectory(dir: string): Promise<{ path: string; what: string } | undefined> {
  const chain: string[] = [];
  for (let p = path.resolve(dir); ; p = path.dirname(p)) {
    chain.unshift(p);
    if (path.dirname(p) === p) break;
  }
  for (const p of chain) {
    const l = await fs.lstat(p).catch(() => undefined);
    if (!l) return undefined;
    const target = l.isSymbolicLink() ? await fs.stat(p).catch(() => undefined) : l;
    if (target?.isDirectory()) continue;
    const kind = (s: import('node:fs').Stats): string =>
      s.isFile()
        ? 'a file'
        : s.isFIFO()
          ? 'a FIFO'
          : s.isSocket()
            ? 'a socket'
            : s.isBlockDevice() || s.isCharacterDevice()
              ? 'a device'
              : 'an entry of another type';
    const link = l.isSymbolicLink() ? `a symbolic link to ${await fs.readlink(p).catch(() => '?')}` : '';
    const what = !target
      ? `is ${link}, which does not exist`
      : `is ${link ? `${link} (${kind(target)})` : kind(l)}, not a directory`;
    return { path: p, what };
  }
  return undefined;
}

/**
 * Why making or writing the state dir failed, in words: the common errno codes as a sentence (with the
 * code in parentheses), any other error as its message.
 */
function whyNotUsable(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  const said: Record<string, string> = {
    ENAMETOOLONG: 'a name in its path is longer than the file system allows (usually 255 bytes per name)',
    EACCES: 'permission denied (this user may not create or write it)',
    EPERM: 'the operation is not permitted here',
    EROFS: 'the file system is read-only',
    ENOSPC: 'the file system is full',
    ELOOP: 'its path has too many symbolic links (a loop?)',
  };
  return code && Object.prototype.hasOwnProperty.call(said, code) ? `${said[code]} (${code})` : (e as Error).message;
}

/** The uid of this process (undefined where the platform has none). */
function myUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/**
 * Create the state dir (mode 0700) and check it is a writable directory of ours. A state dir that
 * exists with wider permissions (e.g. 0755, as `mkdir` or an admin makes /var/lib/agentkeep) is
 * made 0700: it holds copies of every captured file, secrets included, and a restore point must
 * never widen who can read a file. Also writes the space reserve (best effort).
 * @throws AgentKeepError BadStateDir when it cannot be created or written, is owned by another
 *   user, or its permissions cannot be narrowed; the hint names the fix.
 */
export async function ensureStateDir(layout: StateLayout): Promise<void> {
  let st: import('node:fs').Stats;
  try {
    // (the checks of an existing state dir, every operation's first steps, are synchronous calls: each
    // is cheaper than the thread-pool round trip of its async form)
    fsSync.mkdirSync(layout.root, { recursive: true, mode: 0o700 });
    st = fsSync.statSync(layout.root);
    if (!st.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'EEXIST' });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const blocker =
      code === 'EEXIST' || code === 'ENOTDIR' || code === 'ENOENT' ? await notADirectory(layout.root) : undefined;
    if (blocker)
      throw new AgentKeepError(
        'BadStateDir',
        blocker.path === layout.root
          ? `The state dir ${layout.root} is not usable: it ${blocker.what}.`
          : `The state dir ${layout.root} is not usable: ${blocker.path} ${blocker.what}, so it cannot be made.`,
        `Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory elsewhere, or move ${blocker.path} aside.`,
      );
    throw new AgentKeepError(
      'BadStateDir',
      `The state dir ${layout.root} is not usable: ${whyNotUsable(e)}.`,
      'Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory.',
    );
  }
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid) {
    throw new AgentKeepError(
      'BadStateDir',
      `The state dir ${layout.root} belongs to uid ${st.uid}, not to this user (uid ${uid}); its restore points would mix owners and could be read by another user.`,
      `Make it yours (sudo chown -R ${uid} ${layout.root} && chmod 700 ${layout.root}), or point --state-dir (or AGENTKEEP_STATE_DIR) at a directory of your own.`,
    );
  }
  if ((st.mode & 0o077) !== 0) {
    try {
      fsSync.chmodSync(layout.root, st.mode & 0o700);
    } catch (e) {
      throw new AgentKeepError(
        'BadStateDir',
        `The state dir ${layout.root} can be read by other users (mode ${(st.mode & 0o777).toString(8)}) and could not be made private: ${(e as Error).message}.`,
        `Run: chmod 700 ${layout.root}, or point --state-dir (or AGENTKEEP_STATE_DIR) at a directory of your own.`,
      );
    }
  }
  try {
    fsSync.accessSync(layout.root, fsSync.constants.W_OK);
    fsSync.mkdirSync(layout.locksDir, { recursive: true, mode: 0o700 });
    fsSync.mkdirSync(layout.inflightDir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new AgentKeepError(
      'BadStateDir',
      `The state dir ${layout.root} is not usable: ${whyNotUsable(e)}.`,
      'Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory.',
    );
  }
  await ensureReserve(layout);
}
