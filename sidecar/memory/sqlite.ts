/**
 * Read-only access to SQLite databases of agent stores (Hermes state.db, mem0 history.db, a local
 * Qdrant storage.sqlite, ...), shared by the store adapters. Pure WASM (node-sqlite3-wasm), no native
 * module. The database is NEVER opened in place and never written: it is copied (with its `-wal`
 * file) into a private temp dir and the copy is opened, so
 *   - a database in WAL mode is read with its committed WAL frames applied (the copy is opened with
 *     `PRAGMA locking_mode=EXCLUSIVE`, which lets SQLite build the WAL index in heap memory instead
 *     of the `-shm` file, which node-sqlite3-wasm's VFS cannot map; a torn trailing transaction in
 *     the WAL fails its checksum and is ignored by SQLite, as after a crash);
 *   - a copy taken while the agent wrote (size or mtime of the db or its WAL changed during the copy,
 *     or a checkpoint ran) is retried, so readers never see a torn database;
 *   - transient errors (SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, "database disk image is
 *     malformed" of a copy racing a checkpoint) are retried a few times.
 *
 * API (stable, documented for the other store adapters):
 *   - `consistentCopy(db, destDir, io?)` -> copies db (+ -wal) into destDir, returns the copy's path
 *   - `withReadOnlyDb(db, fn, io?)`      -> copy, open, run fn(db), close, remove the copy; retries
 *   - `captureSqlite(db, dest, io?)`     -> one self-contained file (WAL checkpointed into it) at dest
 *   (`io`: the machine the database is on, sidecar/memory/transport; default this one. A database on
 *   another machine is copied here over SFTP and only the local copy is ever opened.)
 *   - `tableColumns(db, table)`       -> column names of a table (empty when it does not exist)
 *   - `damagedDbHint(db)`             -> the fix for a damaged database (sqlite3 .recover, restore point)
 * A database that stays malformed after the retries is damaged (not a copy racing a write): it is a
 * FileError "SQLite database <path> is damaged: …" with damagedDbHint, never a bare SQLite error.
 * FTS5 is compiled into node-sqlite3-wasm 0.8.60, but readers here do not depend on it (plain
 * tables and LIKE only).
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Database as DatabaseT } from 'node-sqlite3-wasm';
import { AgentKeepError } from '../core/errors';
import { localTransport, type FileStamp, type FileTransport } from './transport';

export type SqliteDb = DatabaseT;

/** How many times a copy or a read is retried before giving up. */
export const SQLITE_RETRIES = 6;

let mod: typeof import('node-sqlite3-wasm') | undefined;
/** Load the WASM module lazily (about 1 MB; only commands that read a database pay for it). */
function sqlite(): typeof import('node-sqlite3-wasm') {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod ??= require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
  } catch (e) {
    throw new AgentKeepError(
      'Internal',
      `Cannot load the SQLite WASM module: ${(e as Error).message}.`,
      'The bundled sidecar needs node-sqlite3-wasm.wasm next to sidecar.js: rebuild with npm run build.',
    );
  }
  return mod;
}

function sameStamp(a: FileStamp | undefined, b: FileStamp | undefined): boolean {
  if (!a || !b) return a === b;
  return a.size === b.size && a.mtime === b.mtime && a.ino === b.ino;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Whether an error from SQLite or the copy is worth retrying. */
export function isTransientSqliteError(e: unknown): boolean {
  const m = String((e as Error)?.message ?? e);
  return /SQLITE_BUSY|SQLITE_LOCKED|SQLITE_IOERR|database is locked|disk I\/O error|malformed|changed during the copy|not a database/i.test(
    m,
  );
}

/** Whether an error (after the retries) says the database file itself is damaged or not SQLite. */
export function isDamagedSqliteError(e: unknown): boolean {
  const msg = String((e as Error)?.message ?? e);
  return /malformed|not a database|SQLITE_CORRUPT|SQLITE_NOTADB|database corruption|file is encrypted/i.test(msg);
}

/**
 * The fix for a damaged SQLite database of an agent store (AgentKeep only reads it, never repairs it):
 * recover what SQLite can still read with the sqlite3 shell's `.recover`, or restore the store from a
 * restore point. Used as the hint of the FileError a damaged database gives.
 */
export function damagedDbHint(db: string): string {
  const q = (p: string): string => (/^[A-Za-z0-9_./:=@%+-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`);
  return (
    'Stop the agent and keep a copy of the file, then recover what SQLite can still read: ' +
    `sqlite3 ${q(db)} ".recover" | sqlite3 ${q(db + '.recovered')} (check it, then move it into place); ` +
    'or restore the store from a restore point (scope agent). AgentKeep only reads this file and never repairs it.'
  );
}

/**
 * The FileError of a database that stays unreadable after the retries: damaged (with the fix) or
 * otherwise. On another machine (`io.remote`) the message shows where, the fix runs there.
 */
function unreadableDb(dbPath: string, e: unknown, io: FileTransport = localTransport): AgentKeepError {
  const msg = (e as Error)?.message ?? String(e);
  const shown = io.display(dbPath);
  if (isDamagedSqliteError(e)) {
    const on = io.remote ? `On ${io.where}: ` : '';
    return new AgentKeepError('FileError', `SQLite database ${shown} is damaged: ${msg}.`, on + damagedDbHint(dbPath));
  }
  const hint = 'Check that it is a SQLite database (not truncated); AgentKeep only reads it.';
  return new AgentKeepError('FileError', `Cannot read SQLite database ${shown}: ${msg}.`, hint);
}

/**
 * Copy `db` and its `-wal` (when present) into `destDir` as one consistent pair: both files are
 * stat'ed before and after the copy, and the copy is repeated while either changed. `io` is the
 * machine the database is on (default this one; over SSH the pair is copied with SFTP and stamped
 * with stat(1) there, at nanosecond mtime resolution); destDir is always local.
 * @returns absolute path of the copied database inside destDir
 * @throws AgentKeepError FileError when db does not exist or cannot be read; TargetBusy-like
 *   FileError when it kept changing over SQLITE_RETRIES attempts
 */
export async function consistentCopy(db: string, destDir: string, io: FileTransport = localTransport): Promise<string> {
  const dest = path.join(destDir, path.basename(db));
  const shown = io.display(db);
  for (let attempt = 0; ; attempt++) {
    const before = await io.stamps([db, db + '-wal']);
    if (!before[0])
      throw new AgentKeepError('FileError', `SQLite database ${shown} does not exist.`, 'Check the store path.');
    await fs.rm(dest + '-wal', { force: true });
    try {
      await io.download(db, dest);
      if (before[1]) await io.download(db + '-wal', dest + '-wal');
    } catch (e) {
      if (e instanceof AgentKeepError) throw e; // the connection, not the file
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && attempt < SQLITE_RETRIES) continue; // WAL removed by a checkpoint meanwhile
      throw new AgentKeepError(
        'FileError',
        `Cannot copy SQLite database ${shown}: ${(e as Error).message}.`,
        'Check that the sidecar can read the file.',
      );
    }
    const after = await io.stamps([db, db + '-wal']);
    if (sameStamp(before[0], after[0]) && sameStamp(before[1], after[1])) return dest;
    if (attempt >= SQLITE_RETRIES) {
      throw new AgentKeepError(
        'FileError',
        `SQLite database ${shown} kept changing while it was copied (${attempt + 1} attempts).`,
        'Try again in a moment, when the agent is idle.',
      );
    }
    await sleep(20 * (attempt + 1));
  }
}

/** Open a private copy (WAL applied in heap memory; see the module doc). The caller closes it. */
function openCopy(copy: string, readOnly: boolean): SqliteDb {
  const db = new (sqlite().Database)(copy, { readOnly, fileMustExist: true });
  try {
    db.exec('PRAGMA locking_mode=EXCLUSIVE');
    db.get('SELECT count(*) AS n FROM sqlite_master'); // forces the first read: header + WAL index
    if (readOnly) {
      // A damaged page that no query of ours happens to read must still make the store "damaged",
      // never clean: SQLite's quick_check reads every page (O(pages), no index cross-check).
      const r = db.get('PRAGMA quick_check(1)') as Record<string, unknown> | undefined;
      const verdict = r ? String(Object.values(r)[0]) : 'ok';
      // the same words SQLite uses when a query reads the damaged page (the page list is for sqlite3 itself)
      if (verdict !== 'ok') throw new Error('database disk image is malformed');
    }
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

/**
 * Run `fn` on a read-only, consistent copy of the database at `dbPath` (see the module doc); the
 * copy is removed afterwards. Transient errors (copy raced a write, SQLITE_BUSY, ...) are retried.
 * @throws AgentKeepError FileError: missing or unreadable database, or one that stays unreadable
 *   after the retries: "is damaged" with the recovery hint (damagedDbHint) when SQLite says it is
 *   malformed or not a database, at open or in a query of `fn` (a damaged page in the middle);
 *   errors thrown by `fn` that are not transient pass through.
 */
export async function withReadOnlyDb<T>(
  dbPath: string,
  fn: (db: SqliteDb) => T | Promise<T>,
  io: FileTransport = localTransport,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-sqlite-'));
    try {
      const copy = await consistentCopy(dbPath, dir, io);
      let db: SqliteDb;
      try {
        db = openCopy(copy, true);
      } catch (e) {
        if (attempt < SQLITE_RETRIES && isTransientSqliteError(e)) {
          await sleep(20 * (attempt + 1));
          continue;
        }
        throw unreadableDb(dbPath, e, io);
      }
      try {
        return await fn(db);
      } catch (e) {
        if (e instanceof AgentKeepError || !isTransientSqliteError(e)) throw e;
        // still failing after the retries: the database itself is damaged (a page in the middle), not a race
        if (attempt >= SQLITE_RETRIES) throw unreadableDb(dbPath, e, io);
      } finally {
        db.close();
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
    await sleep(20 * (attempt + 1));
  }
}

/**
 * Write one self-contained, consistent copy of the database at `dbPath` to `dest` (for restore
 * points): the db and its WAL are copied consistently, then the WAL is checkpointed into the copy
 * (the copy, never the original, is opened read-write). Without a WAL the file is copied as is.
 * The result keeps the database's journal mode (a WAL database stays in WAL mode, with no -wal file).
 * @throws AgentKeepError FileError as withReadOnlyDb
 */
export async function captureSqlite(dbPath: string, dest: string, io: FileTransport = localTransport): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-sqlite-'));
    try {
      const copy = await consistentCopy(dbPath, dir, io);
      const hasWal = await fs.stat(copy + '-wal').catch(() => undefined);
      if (hasWal) {
        try {
          const db = openCopy(copy, false);
          try {
            db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
          } finally {
            db.close();
          }
        } catch (e) {
          if (attempt < SQLITE_RETRIES && isTransientSqliteError(e)) continue;
          throw new AgentKeepError(
            'FileError',
            `Cannot take a consistent copy of SQLite database ${io.display(dbPath)}: ${(e as Error).message}.`,
            'Check that it is a SQLite database; AgentKeep only reads it.',
          );
        }
      }
      await fs.copyFile(copy, dest);
      return;
    } finally {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/** Column names of `table` ([] when there is no such table). */
export function tableColumns(db: SqliteDb, table: string): string[] {
  return db.all(`PRAGMA table_info(${JSON.stringify(table)})`).map((r) => String((r as Record<string, unknown>).name));
}
