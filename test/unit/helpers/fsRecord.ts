/**
 * Record, in order, every fsync (its start and end, by the path its descriptor names then) and every
 * synchronous rename a piece of code makes, through the node:fs module object itself (the namespace
 * import's properties are read-only getters): for tests of the order of a create's or a restore's
 * writes (docs/dir-backend.md "The order of a create's writes").
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';

const nodeFs = createRequire(__filename)('node:fs') as typeof fs;

/** One recorded call; `n` numbers them in the order they happened. */
export type FsEv =
  { k: 'fsync-start' | 'fsync-end'; p: string; n: number } | { k: 'rename'; from: string; to: string; n: number };

/**
 * Run `fn` with fs.fsync and fs.renameSync recorded (put back afterwards, also when it throws).
 * @returns the events in order, `done` (the number of events when `fn` settled) and `fn`'s result
 */
export async function recordFsWrites<T>(fn: () => Promise<T>): Promise<{ ev: FsEv[]; done: number; result: T }> {
  const ev: FsEv[] = [];
  let n = 0;
  const realFsync = nodeFs.fsync;
  const realRenameSync = nodeFs.renameSync;
  const where = (fd: number): string => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return `fd ${fd}`;
    }
  };
  (nodeFs as { fsync: unknown }).fsync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void): void => {
    const p = where(fd);
    ev.push({ k: 'fsync-start', p, n: n++ });
    realFsync(fd, (e) => {
      ev.push({ k: 'fsync-end', p, n: n++ });
      cb(e);
    });
  };
  (nodeFs as { renameSync: unknown }).renameSync = (from: fs.PathLike, to: fs.PathLike): void => {
    realRenameSync(from, to);
    ev.push({ k: 'rename', from: String(from), to: String(to), n: n++ });
  };
  try {
    const result = await fn();
    return { ev, done: n, result };
  } finally {
    (nodeFs as { fsync: unknown }).fsync = realFsync;
    (nodeFs as { renameSync: unknown }).renameSync = realRenameSync;
  }
}
