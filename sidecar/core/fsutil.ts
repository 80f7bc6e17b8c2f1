/**
 * Small file-system helpers for the sidecar's own state: atomic writes (temp file in the same
 * directory + fsync + rename + fsync of the directory), JSON read/write, unique temp names.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from './errors';

/** A temp name next to `file`: `.<base>.ak-tmp-<hex>` (hidden, same directory, so rename is atomic). */
export function tempNameFor(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.ak-tmp-${randomBytes(6).toString('hex')}`);
}

/** The exact shape of tempNameFor's base names: `.<base>.ak-tmp-<12 hex>`. */
export const TEMP_NAME_PATTERN = /^\..+\.ak-tmp-[0-9a-f]{12}$/s;

/** Whether a base name is one of our temp names (tempNameFor; left over by a crash or an interrupt). */
export function isTempName(name: string): boolean {
  return TEMP_NAME_PATTERN.test(name);
}

/** fsync a directory so a rename inside it is durable (ignored where the platform refuses). */
export async function fsyncDir(dir: string): Promise<void> {
  let h: fs.FileHandle | undefined;
  try {
    h = await fs.open(dir, 'r');
    await h.sync();
  } catch {
    /* some file systems do not allow fsync on directories */
  } finally {
    await h?.close();
  }
}

/**
 * Write `data` to `file` atomically: temp file in the same directory, optional fsync, rename over
 * `file`, optional fsync of the directory. The temp file is removed on failure.
 * @param opts.mode file mode of the result (default 0o644)
 * @param opts.durable fsync file and directory (default true)
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: { mode?: number; durable?: boolean } = {},
): Promise<void> {
  const tmp = tempNameFor(file);
  const durable = opts.durable ?? true;
  let h: fs.FileHandle | undefined;
  try {
    h = await fs.open(tmp, 'wx', opts.mode ?? 0o644);
    await h.writeFile(data);
    if (durable) await h.sync();
    await h.close();
    h = undefined;
    await fs.rename(tmp, file);
  } catch (e) {
    await h?.close().catch(() => undefined);
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
  if (durable) await fsyncDir(path.dirname(file));
}

/** JSON.stringify + writeFileAtomic (pretty-printed when `pretty`). */
export async function writeJsonAtomic(file: string, value: unknown, opts: { pretty?: boolean; durable?: boolean } = {}): Promise<void> {
  const text = opts.pretty === false ? JSON.stringify(value) : JSON.stringify(value, null, 2) + '\n';
  await writeFileAtomic(file, text, { durable: opts.durable });
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

/** Whether an errno-style error has one of `codes`. */
export function isErrno(e: unknown, ...codes: string[]): boolean {
  return typeof e === 'object' && e !== null && codes.includes((e as NodeJS.ErrnoException).code ?? '');
}

/**
 * Run `fn` over `items` with at most `limit` promises in flight; results in input order. After the
 * first failure no new item is started, and the call settles only once the calls in flight have
 * settled (so a caller's cleanup never races a call still writing); then the first error is thrown.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
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
