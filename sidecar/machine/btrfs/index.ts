/**
 * The `btrfs` backend: restore points of a btrfs subvolume (`btrfs:/abs/path/to/subvolume`) as
 * read-only btrfs snapshots, O(1) whatever the size of the tree. See docs/btrfs.md.
 *
 * Where snapshots live: `<parent>/.agentkeep-snapshots/<name>/<id>`, where `<parent>/<name>` is the
 * subvolume. That directory is a plain directory in the subvolume that holds the target (so it is
 * on the same filesystem: snapshots and renames cannot cross filesystems), and it is outside the
 * target (a snapshot of the target never contains older snapshots, and a rollback, which replaces the
 * whole subvolume, never removes them).
 *
 * Rollback (restore): a writable snapshot of the chosen snapshot is made next to the others, the
 * agent-state paths spared by scope `machine` are copied into it from the live subvolume (reflinks),
 * then the live subvolume is renamed away and the new one renamed into its place. Between the two
 * renames (microseconds) the path does not exist: Node has no renameat2(RENAME_EXCHANGE). The replaced
 * live subvolume is then deleted: the core took a `pre-restore` restore point of it just before (a
 * read-only snapshot), which is the undo. A failure before the second rename puts everything back.
 *
 * Changes (diff, compare, the restore's change list) are stat-level: a snapshot keeps inode numbers
 * and ctimes, and any write changes ctime, so (type, mode, size, mtime, ctime, inode, link target)
 * equal means unchanged; a file touched with the same content is reported as changed. Between two
 * read-only snapshots they come from the send stream (sendstream.ts: work proportional to the
 * changes); when that fails, from a full stat walk of both trees with the dir backend's scanner.
 * diff (against now) takes a temporary read-only snapshot of the live subvolume for that.
 */
import { randomBytes } from 'node:crypto';
import { execFile, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { deleteAction, listAction } from '../../core/actions';
import { AgentKeepError } from '../../core/errors';
import { isErrno, throwIfAborted } from '../../core/fsutil';
import { isValidId } from '../../core/journal';
import { tooLarge } from '../../core/compare';
import type { TargetDescription } from '../../protocol';
import { parseLocalPathTarget, type LocalPathOptions } from '../localPath';
import type {
  BackendContext,
  BackendFactory,
  BackendProgress,
  MachineBackend,
  MachineChanges,
  PathFilter,
  RestoreOutcome,
  SnapshotFile,
  SnapshotInfo,
} from '../types';
import type { Entry } from '../dir/manifest';
import { scanTree } from '../dir/scan';
import { btrfs, filesystemDu, isBtrfs, isSubvolumeRoot, mountPoints, permissionError } from './progs';
import { compareBySend } from './sendstream';

/** Name of the hidden directory (in the subvolume's parent) that holds the snapshots. */
export const SNAPSHOTS_DIR = '.agentkeep-snapshots';

/**
 * Stat-level equality of two scanned entries (no content hashes; see the file header). Directories
 * compare by mode only, as in the dir backend: an added or removed child is reported itself.
 */
function sameStat(a: Entry, b: Entry): boolean {
  if (a.t !== b.t || a.m !== b.m) return false;
  if (a.t === 'd') return true;
  return a.s === b.s && a.mt === b.mt && a.ct === b.ct && a.i === b.i && a.l === b.l;
}

/** Changes from snapshot `from` to snapshot `to` via the send stream, else by walking both trees. */
async function compareSnapshots(from: string, to: string, skip?: PathFilter): Promise<MachineChanges> {
  try {
    return await compareBySend(from, to, skip);
  } catch {
    return compareTrees(from, to, skip);
  }
}

/** Changes from tree `from` to tree `to` (added = only in `to`), by a stat-only walk of both. */
export async function compareTrees(from: string, to: string, skip?: PathFilter): Promise<MachineChanges> {
  const noHash = async (): Promise<{ hash: string; newBytes: number }> => ({ hash: '', newBytes: 0 });
  const [a, b] = await Promise.all([
    scanTree(from, { hashFile: noHash, skip }),
    scanTree(to, { hashFile: noHash, skip }),
  ]);
  const am = new Map(a.entries.map((e) => [e.p, e]));
  const bm = new Map(b.entries.map((e) => [e.p, e]));
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const e of b.entries) {
    const o = am.get(e.p);
    if (!o) added.push(e.p);
    else if (!sameStat(o, e)) changed.push(e.p);
  }
  for (const e of a.entries) if (!bm.has(e.p)) removed.push(e.p);
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() };
}

/** Target-relative paths below `root` that `skip` accepts (a directory accepted whole is not entered). */
async function skippedPaths(root: string, skip: PathFilter, rel = ''): Promise<string[]> {
  const out: string[] = [];
  let names: string[];
  try {
    names = (await fs.readdir(rel ? path.join(root, rel) : root)).sort();
  } catch (e) {
    if (isErrno(e, 'ENOENT', 'ENOTDIR')) return out;
    throw e;
  }
  for (const n of names) {
    const p = rel ? `${rel}/${n}` : n;
    if (skip(p)) {
      out.push(p);
      continue;
    }
    const st = await fs.lstat(path.join(root, p)).catch(() => undefined);
    if (st?.isDirectory()) out.push(...(await skippedPaths(root, skip, p)));
  }
  return out;
}

/** `cp -a --reflink=auto src dst` (keeps modes, owners, times, links; shares extents on btrfs). */
function cpReflink(src: string, dst: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('cp', ['-a', '--reflink=auto', '--', src, dst], (err, _o, stderr) =>
      err ? reject(new Error(`cp ${src}: ${(stderr || err.message).trim()}`)) : resolve(),
    );
  });
}

/** How long a measured disk use is reused (ms): the live subvolume's writes change exclusive bytes slowly. */
const USAGE_CACHE_MS = 30_000;
const usageCache = new Map<
  string,
  { at: number; value: { bytes: number; points: Map<string, { bytes: number; newBytes: number }> } }
>();

/** `btrfs subvolume delete p` in a detached process (it outlives a CLI that exits). */
function backgroundDelete(p: string): void {
  try {
    spawn('btrfs', ['subvolume', 'delete', p], { detached: true, stdio: 'ignore' })
      .on('error', () => undefined)
      .unref();
  } catch {
    /* swept by the next create or restore */
  }
}

/** The btrfs backend for one target (a subvolume). */
export class BtrfsBackend implements MachineBackend {
  readonly name = 'btrfs';
  readonly capabilities = { ramState: false, speedClass: 'instant', canRunWhileRunning: true, diff: true } as const;
  /** The subvolume. */
  readonly subvol: string;
  /** `<parent>/.agentkeep-snapshots/<name>`: where this target's snapshots live. */
  readonly snapDir: string;

  /** The target as given (for the errors' next actions). */
  private readonly spec: string;

  constructor(ctx: BackendContext) {
    this.subvol = ctx.target.path;
    this.spec = ctx.target.spec;
    this.snapDir = path.join(path.dirname(this.subvol), SNAPSHOTS_DIR, path.basename(this.subvol));
  }

  /** Path of snapshot `id`. */
  snapshotPath(id: string): string {
    return path.join(this.snapDir, id);
  }

  /**
   * Check the target: it exists, is on btrfs, is the root of a subvolume, is not a mount point, and
   * its parent directory is on the same btrfs filesystem.
   * @throws AgentKeepError TargetNotFound (missing; names a `.replaced-*` left by an interrupted
   *   rollback), BadTarget (not btrfs: hint dir:; a plain directory: hint `btrfs subvolume create`;
   *   a mount point; the filesystem root), FileError (permission denied)
   */
  async check(): Promise<void> {
    const p = this.subvol;
    if (p === '/')
      throw new AgentKeepError(
        'BadTarget',
        'btrfs:/ is the root of the system; a rollback cannot replace it.',
        'Use a subvolume below it, e.g. btrfs:/srv/agent.',
      );
    let st: import('node:fs').Stats;
    try {
      st = await fs.stat(p);
    } catch (e) {
      if (isErrno(e, 'EACCES', 'EPERM')) throw permissionError(`read ${p}`, e);
      const left = await this.leftBehind('.replaced-');
      if (left.length) {
        throw new AgentKeepError(
          'TargetNotFound',
          `Subvolume ${p} does not exist; an interrupted rollback left the previous subvolume at ${left[0]}.`,
          `Put it back with: mv ${left[0]} ${p}`,
        );
      }
      throw new AgentKeepError(
        'TargetNotFound',
        `Subvolume ${p} does not exist.`,
        `Create it: btrfs subvolume create ${p}`,
      );
    }
    if (!st.isDirectory())
      throw new AgentKeepError(
        'BadTarget',
        `Target ${p} is not a directory.`,
        'A btrfs: target names a subvolume, e.g. btrfs:/srv/agent.',
      );
    if (!(await isBtrfs(p))) {
      throw new AgentKeepError(
        'BadTarget',
        `${p} is not on a btrfs filesystem.`,
        `Use dir:${p} instead (file-level restore points that work on any filesystem).`,
      );
    }
    if (!(await isSubvolumeRoot(p))) {
      throw new AgentKeepError(
        'BadTarget',
        `${p} is a plain directory on btrfs, not a subvolume.`,
        `Make it a subvolume: mv ${p} ${p}.old && btrfs subvolume create ${p} && cp -a --reflink=auto ${p}.old/. ${p}/ (or use dir:${p}).`,
      );
    }
    if ((await mountPoints()).has(p) || !(await isBtrfs(path.dirname(p)).catch(() => false))) {
      throw new AgentKeepError(
        'BadTarget',
        `Subvolume ${p} is a mount point (or its parent is not on the same btrfs), so snapshots cannot be placed next to it and a rollback cannot rename it.`,
        "Mount the filesystem's top level (mount -o subvolid=5 DEVICE /mnt/top) and use the subvolume's path below it, e.g. btrfs:/mnt/top/agent.",
      );
    }
  }

  /**
   * Delete temp subvolumes a restore left (`.restore-*`: an interrupted rollback's new copy;
   * `.replaced-*`: a replaced subvolume whose background delete did not finish), in the background.
   * Only called under the target lock, after check() found the live subvolume in place.
   */
  private async sweep(): Promise<void> {
    for (const p of [...(await this.leftBehind('.restore-')), ...(await this.leftBehind('.replaced-'))]) {
      const age = await fs.stat(p).then(
        (st) => Date.now() - st.ctimeMs,
        () => 0,
      );
      if (age > 60_000) backgroundDelete(p); // younger: a delete of our own may still be running
    }
  }

  /** Entries `<prefix>*` in the snapshot dir (temp subvolumes of an interrupted restore). */
  private async leftBehind(prefix: string): Promise<string[]> {
    const names = await fs.readdir(this.snapDir).catch(() => [] as string[]);
    return names.filter((n) => n.startsWith(prefix)).map((n) => path.join(this.snapDir, n));
  }

  /**
   * Take a read-only snapshot (`btrfs subvolume snapshot -r`). O(1): nothing is walked, so files,
   * bytes and newBytes are reported as 0 (disk use comes from `usage`, btrfs filesystem du).
   * @throws as check; FileError (permission denied); Internal (btrfs refused)
   */
  async create(snapshotId: string, opts: { progress?: BackendProgress; signal?: AbortSignal }): Promise<SnapshotInfo> {
    await this.check();
    await this.sweep();
    throwIfAborted(opts.signal, 'the restore point was not created; nothing in the target was changed');
    try {
      await fs.mkdir(this.snapDir, { recursive: true, mode: 0o700 });
    } catch (e) {
      if (isErrno(e, 'EACCES', 'EPERM', 'EROFS')) throw permissionError(`create ${this.snapDir}`, e);
      throw e;
    }
    opts.progress?.('store', 0, 1);
    await btrfs(['subvolume', 'snapshot', '-r', this.subvol, this.snapshotPath(snapshotId)], `snapshot ${this.subvol}`);
    opts.progress?.('store', 1, 1);
    return {
      files: 0,
      bytes: 0,
      newBytes: 0,
      snapname: path.join(SNAPSHOTS_DIR, path.basename(this.subvol), snapshotId),
    };
  }

  /** Ids of the snapshots in the snapshot dir (temp subvolumes of a restore are left out). */
  async list(): Promise<string[]> {
    const names = await fs.readdir(this.snapDir).catch(() => [] as string[]);
    return names.filter((n) => isValidId(n)).sort();
  }

  /** The snapshot's path, checked to exist. @throws CorruptSnapshot when it is gone. */
  private async existing(id: string): Promise<string> {
    const p = this.snapshotPath(id);
    if (
      !isValidId(id) ||
      !(await fs.stat(p).then(
        (s) => s.isDirectory(),
        () => false,
      ))
    ) {
      throw new AgentKeepError(
        'CorruptSnapshot',
        `The btrfs snapshot of ${id} is missing (${p}).`,
        'Pick another restore point, or delete this one.',
        [listAction(this.spec), ...(isValidId(id) ? [deleteAction(this.spec, id)] : [])],
      );
    }
    return p;
  }

  /** Delete the snapshot (`btrfs subvolume delete`); a missing one is fine. */
  async delete(snapshotId: string): Promise<void> {
    const p = this.snapshotPath(snapshotId);
    if (
      !isValidId(snapshotId) ||
      !(await fs.lstat(p).then(
        () => true,
        () => false,
      ))
    )
      return;
    await btrfs(['subvolume', 'delete', p], `delete snapshot ${p}`);
  }

  /** What a restore would change (added = exists now, not in the snapshot), via a temporary read-only snapshot of now. */
  async diff(snapshotId: string, opts: { skip?: PathFilter }): Promise<MachineChanges> {
    await this.check();
    const snap = await this.existing(snapshotId);
    const now = path.join(this.snapDir, `.diff-${randomBytes(6).toString('hex')}`);
    try {
      await btrfs(['subvolume', 'snapshot', '-r', this.subvol, now], `snapshot ${this.subvol} for a diff`);
    } catch {
      return compareTrees(snap, this.subvol, opts.skip);
    }
    try {
      return await compareSnapshots(snap, now, opts.skip);
    } finally {
      await btrfs(['subvolume', 'delete', now], `delete ${now}`).catch(() => undefined);
    }
  }

  async compare(fromId: string, toId: string): Promise<MachineChanges> {
    return compareSnapshots(await this.existing(fromId), await this.existing(toId));
  }

  /**
   * One path of a snapshot, read from the read-only snapshot directory. A path whose parent inside the
   * snapshot is a symlink is reported as `none` (never followed out of the snapshot).
   */
  async readFile(snapshotId: string, rel: string, maxBytes: number): Promise<SnapshotFile> {
    const root = await this.existing(snapshotId);
    const parts = rel.split('/').filter(Boolean);
    let cur = root;
    for (let i = 0; i < parts.length; i++) {
      cur = path.join(cur, parts[i]);
      const st = await fs.lstat(cur).catch(() => undefined);
      if (!st) return { type: 'none', size: 0 };
      const last = i === parts.length - 1;
      if (!last) {
        if (!st.isDirectory()) return { type: 'none', size: 0 };
        continue;
      }
      if (st.isDirectory()) return { type: 'directory', size: 0 };
      if (st.isSymbolicLink()) {
        const data = Buffer.from(await fs.readlink(cur));
        return { type: 'symlink', size: data.length, data };
      }
      if (!st.isFile()) return { type: 'none', size: 0 };
      if (st.size > maxBytes) throw tooLarge(rel, st.size, maxBytes);
      return { type: 'file', size: st.size, data: await fs.readFile(cur) };
    }
    return { type: 'directory', size: 0 };
  }

  /**
   * Roll back: swap in a writable snapshot of `snapshotId` (see the file header). Paths `skip`
   * accepts keep their current content (copied from the live subvolume into the new one first).
   * @returns the changes (stat-only compare of the replaced and the new tree, except skipped paths);
   *   `warnings` when the replaced subvolume could not be deleted (it is left in the snapshot dir).
   * @throws CorruptSnapshot (snapshot gone), FileError (permission), Internal; nothing is changed then.
   */
  async restore(
    snapshotId: string,
    opts: { currentId?: string; skip?: PathFilter; progress?: BackendProgress; signal?: AbortSignal },
  ): Promise<RestoreOutcome> {
    await this.check();
    const snap = await this.existing(snapshotId);
    const tag = randomBytes(6).toString('hex');
    const fresh = path.join(this.snapDir, `.restore-${tag}`);
    const replaced = path.join(this.snapDir, `.replaced-${tag}`);
    const warnings: string[] = [];
    opts.progress?.('restore', 0, 1);
    // What changes (before the swap, while both trees are still there).
    let changes: MachineChanges = { added: [], removed: [], changed: [] };
    try {
      // the pre-restore snapshot the core just took is the current state
      const cur = opts.currentId && isValidId(opts.currentId) ? this.snapshotPath(opts.currentId) : undefined;
      const haveCur =
        cur &&
        (await fs.stat(cur).then(
          () => true,
          () => false,
        ));
      changes = haveCur
        ? await compareSnapshots(snap, cur, opts.skip)
        : await compareTrees(snap, this.subvol, opts.skip);
    } catch (e) {
      warnings.push(
        `The list of changed files is not available (${(e as Error).message}); the rollback itself is complete.`,
      );
    }
    throwIfAborted(opts.signal, 'the restore was stopped before it changed anything');
    await btrfs(['subvolume', 'snapshot', snap, fresh], `make a writable copy of snapshot ${snapshotId}`);
    const dropFresh = (): Promise<unknown> =>
      btrfs(['subvolume', 'delete', fresh], `delete ${fresh}`).catch(() => undefined);
    try {
      if (opts.skip) await this.carryOver(fresh, opts.skip);
      throwIfAborted(opts.signal, 'the restore was stopped before it changed anything');
    } catch (e) {
      await dropFresh();
      throw e;
    }
    // The swap: two renames in the parent's subvolume.
    try {
      await fs.rename(this.subvol, replaced);
    } catch (e) {
      await dropFresh();
      if (isErrno(e, 'EACCES', 'EPERM', 'EBUSY'))
        throw permissionError(`move ${this.subvol} away for the rollback (is a process using it as a mount point?)`, e);
      throw e;
    }
    try {
      await fs.rename(fresh, this.subvol);
    } catch (e) {
      await fs.rename(replaced, this.subvol).catch(() => undefined);
      await dropFresh();
      throw e;
    }
    // The replaced subvolume is the pre-restore restore point's state already; deleting it takes
    // seconds for a large tree (the kernel drops its cached dentries), so it runs in the background.
    // One that survives (a crash, an error) is swept by the next create or restore.
    backgroundDelete(replaced);
    opts.progress?.('restore', 1, 1);
    return { ...changes, ...(warnings.length ? { warnings } : {}) };
  }

  /** Make the paths `skip` accepts in `fresh` what they are in the live subvolume (remove, then copy). */
  private async carryOver(fresh: string, skip: PathFilter): Promise<void> {
    for (const rel of (await skippedPaths(fresh, skip)).reverse())
      await fs.rm(path.join(fresh, rel), { recursive: true, force: true });
    for (const rel of await skippedPaths(this.subvol, skip)) {
      const dst = path.join(fresh, rel);
      await this.mkParents(fresh, rel);
      await cpReflink(path.join(this.subvol, rel), dst);
    }
  }

  /** Create the missing parent directories of `rel` in `fresh`, with the live subvolume's modes. */
  private async mkParents(fresh: string, rel: string): Promise<void> {
    const parts = rel.split('/').slice(0, -1);
    let cur = '';
    for (const part of parts) {
      cur = cur ? `${cur}/${part}` : part;
      const d = path.join(fresh, cur);
      const st = await fs.lstat(d).catch(() => undefined);
      if (st?.isDirectory()) continue;
      if (st) await fs.rm(d, { force: true });
      const live = await fs.stat(path.join(this.subvol, cur));
      await fs.mkdir(d, { mode: live.mode & 0o7777 });
      await fs.chmod(d, live.mode & 0o7777);
      await fs.chown(d, live.uid, live.gid).catch(() => undefined);
    }
  }

  /**
   * Disk use of the snapshots (`btrfs filesystem du -s --raw`, which walks every file of every
   * snapshot: seconds for large trees). `bytes` = bytes of extents the snapshots reference, each
   * counted once (exclusive + set shared of the snapshot dir, including extents still shared with the
   * live subvolume); per snapshot: `bytes` = logical size, `newBytes` = bytes only it references.
   * With `quick`, undefined (the walk is not cheap). A result for the same snapshots is reused for 30 s.
   */
  async usage(
    ids: string[],
    opts: { quick?: boolean } = {},
  ): Promise<{ bytes: number; points: Map<string, { bytes: number; newBytes: number }> } | undefined> {
    if (opts.quick) return undefined;
    // The Agent view asks after every change: answers for the same snapshots are reused for a while.
    const key = `${this.snapDir}\0${[...ids].sort().join(',')}`;
    const hit = usageCache.get(key);
    if (hit && Date.now() - hit.at < USAGE_CACHE_MS) return hit.value;
    const value = await this.measure(ids);
    usageCache.set(key, { at: Date.now(), value });
    if (usageCache.size > 64) usageCache.delete(usageCache.keys().next().value as string);
    return value;
  }

  private async measure(
    ids: string[],
  ): Promise<{ bytes: number; points: Map<string, { bytes: number; newBytes: number }> }> {
    const have = new Set(await this.list());
    const paths = ids.filter((id) => have.has(id)).map((id) => this.snapshotPath(id));
    const points = new Map<string, { bytes: number; newBytes: number }>();
    if (!paths.length) return { bytes: 0, points };
    const per = await filesystemDu(paths);
    for (const id of ids) {
      const r = per.get(this.snapshotPath(id));
      if (r) points.set(id, { bytes: r.total, newBytes: r.exclusive });
    }
    const all = (await filesystemDu([this.snapDir])).get(this.snapDir);
    return { bytes: all ? all.exclusive + all.shared : 0, points };
  }
}

const BTRFS_FORM = 'Write the target as btrfs:/abs/path/to/subvolume, e.g. btrfs:/srv/agent.';

/** The factory registered in sidecar/machine/index.ts. The btrfs backend stores no objects. */
export const btrfsBackend: BackendFactory<LocalPathOptions> = {
  scheme: 'btrfs',
  prefix: 'btrfs:',
  forms: ['btrfs:/abs/path/to/subvolume'],
  example: 'btrfs:/srv/agent',
  formHint: BTRFS_FORM,
  parse: (rest, spec) => parseLocalPathTarget('btrfs', rest, spec, BTRFS_FORM),
  describe: (t): TargetDescription => ({
    target: t.spec,
    backend: 'btrfs',
    name: path.basename(t.options.path) || t.options.path,
    kind: 'directory',
    localRoot: t.options.path,
    snapshotNoun: 'btrfs snapshot',
    capabilities: {
      ramState: false,
      ramStateOnRequest: false,
      diff: true,
      compare: true,
      readFile: true,
      relabel: false,
      guestAccess: false,
      discover: false,
      startAfterRollback: false,
      rollbackStopsGuest: false,
      speedClass: 'instant',
      canRunWhileRunning: true,
    },
  }),
  create: (ctx) => new BtrfsBackend(ctx),
};
