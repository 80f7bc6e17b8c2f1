/**
 * Read-only access to another program's SQLite database (mem0 history.db, Qdrant-local
 * storage.sqlite) with node-sqlite3-wasm (WASM, no native build), never writing the original.
 *
 * The WASM VFS has no shared memory, so a database in WAL mode cannot be opened in place (observed:
 * "unable to open database file"). Instead we take a consistent copy: the database plus its `-wal`
 * and `-journal` are copied into a private temp dir, and the copy is repeated until size, mtime and
 * inode of each are the same before and after (so no checkpoint or commit happened in between); the
 * copy is then opened with `locking_mode=EXCLUSIVE` (wal-index in heap memory), which replays the
 * WAL (or rolls back a hot journal) exactly as SQLite would. For a capture, `VACUUM INTO` writes
 * one self-contained file.
 * TODO(lead): unify with a shared sidecar/memory/sqlite helper if wt-memcore adds one.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Database } from 'node-sqlite3-wasm';
import { AgentKeepError } from '../../core/errors';

const SIDE_FILES = ['-wal', '-journal'];
const MAX_TRIES = 6;

async function signature(p: string): Promise<string> {
  try {
    const st = await fs.stat(p);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '-';
    throw e;
  }
}

async function signatures(db: string): Promise<string> {
  return (await Promise.all([db, ...SIDE_FILES.map((s) => db + s)].map(signature))).join('|');
}

/**
 * Copy `db` and its -wal / -journal into `dir` (same base name) consistently.
 * @returns the path of the copied database
 * @throws FileError when the database is missing or unreadable, or keeps changing (busy writer)
 */
export async function copySqliteFiles(db: string, dir: string): Promise<string> {
  const dest = path.join(dir, path.basename(db));
  for (let i = 0; i < MAX_TRIES; i++) {
    let before: string;
    try {
      before = await signatures(db);
      if (before.startsWith('-')) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
      for (const s of ['', ...SIDE_FILES]) {
        await fs.rm(dest + s, { force: true });
        try {
          await fs.copyFile(db + s, dest + s);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || s === '') throw e;
        }
      }
    } catch (e) {
      throw new AgentKeepError('FileError', `Cannot read SQLite database ${db}: ${(e as Error).message}.`, 'Check that the path is right and readable by the sidecar.');
    }
    if ((await signatures(db)) === before) return dest;
    await new Promise((r) => setTimeout(r, 20 * (i + 1)));
  }
  throw new AgentKeepError('FileError', `SQLite database ${db} kept changing while it was copied (${MAX_TRIES} tries).`, 'The agent is writing heavily; try again in a moment.');
}

/**
 * Run `fn` on a consistent private copy of `dbPath` (see module doc); the copy is removed after.
 * @throws FileError (missing, unreadable, busy, or not a SQLite database)
 */
export async function withSqliteSnapshot<T>(dbPath: string, fn: (db: Database) => T): Promise<T> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-sqlite-'));
  try {
    const copy = await copySqliteFiles(dbPath, dir);
    // loaded on first use: instantiating the WASM module costs ~50 ms that other commands need not pay
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Database: Db } = require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
    let db: Database;
    try {
      db = new Db(copy, { fileMustExist: true });
    } catch (e) {
      throw new AgentKeepError('FileError', `Cannot open SQLite database ${dbPath}: ${(e as Error).message}.`, 'The file is damaged or not SQLite; restore it from a restore point.');
    }
    try {
      db.exec('PRAGMA locking_mode=EXCLUSIVE');
      return fn(db);
    } catch (e) {
      if (e instanceof AgentKeepError) throw e;
      throw new AgentKeepError('FileError', `Cannot read SQLite database ${dbPath}: ${(e as Error).message}.`, 'The file is damaged or not SQLite; restore it from a restore point.');
    } finally {
      db.close();
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/**
 * Write a consistent, self-contained copy of `dbPath` to `dest` (VACUUM INTO; WAL content included,
 * so no -wal is needed next to it). `dest` is replaced.
 * @throws FileError
 */
export async function sqliteConsistentCopy(dbPath: string, dest: string): Promise<void> {
  const tmp = `${dest}.agentkeep-${process.pid}-${Date.now()}`;
  await fs.rm(tmp, { force: true });
  try {
    await withSqliteSnapshot(dbPath, (db) => db.run('VACUUM INTO ?', [tmp]));
    await fs.rename(tmp, dest);
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

/** Column names of `table` (empty when the table does not exist). */
export function columns(db: Database, table: string): string[] {
  return db.all(`PRAGMA table_info(${JSON.stringify(table)})`).map((r) => String((r as { name: unknown }).name));
}
