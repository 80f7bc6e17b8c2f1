/**
 * The default agent-state implementation of the stores whose agent state is files under a local
 * directory (Hermes, Agent Zero, mem0): capture each agent-state file into the object store (a
 * consistent copy through the adapter's captureFile where it has one), restore them (temp file +
 * rename, mode kept, files the capture does not hold removed, emptied directories pruned), and say
 * which files differ from a capture. Plus the parsing the three share for `<kind>:/abs/path[?opts]`
 * and `<kind>:ssh://user@host[:port]/abs/path[?opts]`. The files may be on another machine: every
 * function takes the store's FileTransport (./transport; default this machine), so capture and
 * restore go over SSH (SFTP) for a store there. A store that is not files at all (an API store)
 * implements capture/restore itself instead.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';
import { isErrno, mapLimit, tempNameFor, throwIfAborted } from '../core/fsutil';
import { isInside } from '../core/state';
import { joinOn, localTransport, pathOn, type FileTransport } from './transport';
import { isSshLocation, parseSshLocation, type SshLocation } from './transport/location';
import { SshTransport } from './transport/ssh';
import { GuestAgentTransport, QgaSocketChannel } from './transport/guestAgent';
import { isGuestAgentLocation, parseGuestAgentLocation, type GuestAgentPlace } from './transport/guestLocation';
import { PveAgentChannel } from './transport/pveAgent';
import type { AgentStateOptions, CaptureSink, CapturedFile, MemoryStoreAdapter, RestoreSource } from './types';

/** What the default implementation needs of a file store's adapter. */
export type LocalFileStore = Pick<MemoryStoreAdapter, 'spec' | 'agentStateFiles' | 'isVolatilePath' | 'captureFile'>;

/** The absolute path of store-relative POSIX path `rel` under `root` on the machine of `io`. */
function absOf(root: string, rel: string, io: FileTransport = localTransport): string {
  return joinOn(io, root, rel);
}

/**
 * Capture the agent-state files of a file store under `root` into `sink`, 8 at a time: through the
 * adapter's captureFile (a consistent copy, e.g. a SQLite database in WAL mode) into a temp file when
 * it has one, else the file itself. A file that vanished meanwhile is left out.
 * @throws FileError naming an unreadable file (AgentKeepErrors of captureFile pass through); the
 *   abort error when `opts.signal` fires
 */
export async function captureLocalFiles(
  s: LocalFileStore,
  root: string,
  sink: CaptureSink,
  opts: AgentStateOptions = {},
  io: FileTransport = localTransport,
): Promise<CapturedFile[]> {
  const files = await s.agentStateFiles();
  opts.onFiles?.(files.length);
  const captured = await mapLimit(files, 8, async (rel): Promise<CapturedFile | undefined> => {
    throwIfAborted(opts.signal, opts.abortWhat ?? 'the capture was stopped');
    try {
      if (s.captureFile) return await captureVia(s, rel, sink);
      if (io.remote) {
        const download = (r: string, dest: string): Promise<void> => io.download(absOf(root, r, io), dest);
        return await captureVia({ captureFile: download }, rel, sink);
      }
      const r = await sink.putFile(absOf(root, rel));
      return { path: rel, size: r.size, hash: r.hash };
    } catch (e) {
      if (e instanceof AgentKeepError) throw e;
      if (isErrno(e, 'ENOENT')) return undefined; // vanished meanwhile
      throw new AgentKeepError(
        'FileError',
        `Cannot read agent-state file ${io.display(absOf(root, rel, io))}: ${(e as Error).message}.`,
        'Fix its permissions so the sidecar can read it.',
      );
    }
  });
  return captured.filter((f): f is CapturedFile => !!f);
}

/**
 * One agent-state file through the adapter's captureFile into a temp file, then into the sink.
 * Undefined when the adapter does not capture `rel` on its own (captureFile resolved false).
 */
async function captureVia(
  s: Pick<LocalFileStore, 'captureFile'>,
  rel: string,
  sink: CaptureSink,
): Promise<CapturedFile | undefined> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-capture-'));
  try {
    const tmp = path.join(dir, 'copy');
    if ((await s.captureFile!(rel, tmp)) === false) return undefined;
    const r = await sink.putFile(tmp);
    return { path: rel, size: r.size, hash: r.hash };
  } finally {
    await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** `p` quoted for a POSIX shell (in the fixes the errors name). */
function shq(p: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`;
}

/**
 * Check that restoreLocalFiles can put each of `files` in place under `root` without deleting data
 * that the undo point does not hold (a pre-restore point captures agentStateFiles(): regular files
 * and symlinks only). Where a captured file goes there may be nothing, a file or symlink (captured),
 * a FIFO or socket (no data) or an empty directory (removed); every directory on the way must be a
 * directory or absent. A file that already holds the captured content is not checked.
 * @throws FileError before anything is written: a non-empty directory where a file goes (named with
 *   a few of its entries), or a file, device or dangling symlink where a directory must be; the hint
 *   says to move it away and restore again
 */
export async function checkLocalRestore(
  s: LocalFileStore,
  root: string,
  files: readonly CapturedFile[],
  io: FileTransport = localTransport,
): Promise<void> {
  const refuse = (abs: string, rel: string, what: string): AgentKeepError =>
    new AgentKeepError(
      'FileError',
      `Cannot restore ${rel} of ${s.spec}: ${abs} is ${what}. The undo point would not hold it, so AgentKeep ` +
        'does not delete it; nothing was changed.',
      `Move it away (mv ${shq(abs)} ${shq(`${abs}.moved`)}), check what it holds, then restore again.`,
    );
  for (const f of files) {
    if (s.isVolatilePath?.(f.path)) continue;
    const parts = f.path.split('/');
    // each directory on the way: a directory (or a symlink to one), or absent (created)
    for (let i = 1; i < parts.length; i++) {
      const dir = absOf(root, parts.slice(0, i).join('/'), io);
      const l = await io.lstat(dir).catch(() => undefined);
      if (!l) break; // absent: mkdir creates it and everything below
      const st = l.isSymbolicLink() ? await io.stat(dir).catch(() => undefined) : l;
      if (st?.isDirectory()) continue;
      const what = !st ? 'a symlink to something that does not exist' : st.isFile() ? 'a file' : 'not a directory';
      throw refuse(dir, f.path, `${what}, where the restore needs the directory ${parts.slice(0, i).join('/')}`);
    }
    const abs = absOf(root, f.path, io);
    const st = await io.lstat(abs).catch(() => undefined);
    if (!st?.isDirectory()) continue;
    const names = (await io.readdir(abs)).map((d) => d.name);
    if (!names.length) continue; // an empty directory holds nothing: replaced by the file
    const some = names.slice(0, 3).join(', ') + (names.length > 3 ? ', …' : '');
    const n = `${names.length} ${names.length === 1 ? 'entry' : 'entries'}`;
    throw refuse(abs, f.path, `now a directory holding ${n} (${some}), not the file the restore point holds`);
  }
}

/**
 * Make the agent-state files under `root` what `files` captured, after checkLocalRestore (nothing is
 * written when something is in the way): each file whose content differs is written to a temp file
 * next to it and renamed over it (its mode kept; 0644 for a new file; an empty directory in the way
 * is removed); agent-state files that exist now but are not in `files` (nor in `opts.leaveAlone`) are removed, and directories
 * emptied by that are pruned up to `root`. Volatile paths (lock files) are never touched. The caller
 * has checked that every object exists and holds the store's lock.
 * @returns store-relative paths changed, in the order written
 * @throws FileError from checkLocalRestore (nothing written); the abort error when `opts.signal`
 *   fires (between files); fs errors
 */
export async function restoreLocalFiles(
  s: LocalFileStore,
  root: string,
  files: readonly CapturedFile[],
  src: RestoreSource,
  opts: AgentStateOptions = {},
  io: FileTransport = localTransport,
): Promise<string[]> {
  const what = opts.abortWhat ?? 'the restore was stopped part-way';
  const alone = new Set(opts.leaveAlone ?? []); // broken when captured: the capture says nothing about them
  const current = (await s.agentStateFiles().catch(() => [] as string[])).filter(
    (rel) => !s.isVolatilePath?.(rel) && !alone.has(rel),
  );
  const want = new Set(files.map((f) => f.path));
  await checkLocalRestore(s, root, files);
  const changed: string[] = [];
  const p = pathOn(io);
  for (const f of files) {
    if (s.isVolatilePath?.(f.path)) continue; // a lock file captured by an older version
    throwIfAborted(opts.signal, what);
    const abs = absOf(root, f.path, io);
    const st = await io.lstat(abs).catch(() => undefined);
    if (st?.isFile() && (await io.hashFile(abs)) === f.hash) continue;
    await io.mkdirp(p.dirname(abs));
    // empty (checkLocalRestore): rmdir fails rather than delete what appeared in it since
    if (st?.isDirectory()) await io.rmdir(abs);
    const tmp = tempNameFor(abs, root);
    const mode = st?.isFile() ? st.mode & 0o7777 : 0o644;
    try {
      if (io.remote) await uploadObject(io, src, f.hash, tmp, mode);
      else {
        await src.copyOut(f.hash, tmp);
        await fs.chmod(tmp, mode);
      }
      await io.rename(tmp, abs);
    } catch (e) {
      await io.rm(tmp).catch(() => undefined);
      throw e;
    }
    changed.push(f.path);
  }
  for (const rel of current) {
    if (want.has(rel)) continue;
    throwIfAborted(opts.signal, what);
    const abs = absOf(root, rel, io);
    await io.rm(abs);
    changed.push(rel);
    // Prune directories emptied by the removal, up to the store root.
    let dir = p.dirname(abs);
    while (dir.length > root.length && isInside(dir, root)) {
      try {
        await io.rmdir(dir);
      } catch {
        break;
      }
      dir = p.dirname(dir);
    }
  }
  return changed;
}

/** Write the object `hash` as new file `dest` on another machine (via a local temp copy). */
async function uploadObject(
  io: FileTransport,
  src: RestoreSource,
  hash: string,
  dest: string,
  mode: number,
): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-upload-'));
  try {
    const local = path.join(dir, 'object');
    await src.copyOut(hash, local);
    await io.writeNew(dest, { localFile: local }, mode);
  } finally {
    await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Store-relative paths under `root` whose content differs from `files`: captured files that changed
 * or are gone, then agent-state files that exist now but were not captured.
 */
export async function changedLocalFiles(
  s: LocalFileStore,
  root: string,
  files: readonly CapturedFile[],
  io: FileTransport = localTransport,
): Promise<string[]> {
  const out: string[] = [];
  const current = new Set(await s.agentStateFiles().catch(() => [] as string[]));
  for (const f of files) {
    const h = current.has(f.path) ? await io.hashFile(absOf(root, f.path, io)).catch(() => undefined) : undefined;
    if (h !== f.hash) out.push(f.path);
    current.delete(f.path);
  }
  out.push(...current);
  return out;
}

/**
 * The absolute local path of a file store's string, `<kind>:/abs/path` (also `<kind>:///abs/path`),
 * normalised (no trailing slash, no `..`).
 * @param p the part after `<kind>:` without options
 * @param hint the fix the error names, e.g. "Use hermes:/abs/path/to/.hermes (an absolute path)."
 * @throws AgentKeepError BadStore when the path is empty or not absolute
 */
export function localStorePath(p: string, spec: string, hint: string): string {
  const q = p.startsWith('//') ? p.slice(2) : p; // tolerate hermes:///abs/path
  if (!q || !path.isAbsolute(q))
    throw new AgentKeepError('BadStore', `Store path "${q}" in "${spec}" is not absolute.`, hint);
  return path.resolve(q);
}

/** Where a file store is: a path on this machine, or on another one reached over SSH. */
export interface StorePlace {
  /** Absolute path on the store's machine. */
  path: string;
  /** Set for `ssh://user@host[:port]/abs/path`: how to reach the machine (sidecar/memory/transport). */
  ssh?: SshLocation;
  /** Set for `qga:/abs/qga.sock:/abs/path` and `pve-agent://HOST/NODE/VMID/abs/path`: a VM's guest agent. */
  guest?: GuestAgentPlace;
}

/**
 * Parse the place of a file store: `/abs/path` (see localStorePath), `ssh://[user@]host[:port]/abs/path`
 * with the SSH options of `params` (identity, known_hosts), or a VM's guest agent:
 * `qga:/abs/qga.sock:/abs/path`, `pve-agent://HOST[:PORT]/NODE/VMID/abs/path` (transport/guestLocation.ts).
 * @param p the part after `<kind>:` without options
 * @param hint the fix for a bad local path; `sshForm` the ssh:// form for a bad SSH location
 * @throws AgentKeepError BadStore naming the wrong part
 */
export function storePlace(
  p: string,
  params: URLSearchParams,
  spec: string,
  hint: string,
  sshForm: string,
): StorePlace {
  if (isSshLocation(p)) {
    const ssh = parseSshLocation(p, params, spec, sshForm);
    return { path: ssh.path, ssh };
  }
  if (isGuestAgentLocation(p)) {
    const g = parseGuestAgentLocation(p, spec, /^[^:]*/.exec(spec)?.[0] ?? 'hermes');
    return { path: g.path, guest: g.place };
  }
  return { path: localStorePath(p, spec, hint) };
}

/** The transport of a store place: SSH to its machine, a VM's guest agent, or this machine. */
export function transportOf(place: Pick<StorePlace, 'ssh' | 'guest'>): FileTransport {
  if (place.ssh) return new SshTransport(place.ssh);
  const g = place.guest;
  if (g?.via === 'qga') return new GuestAgentTransport(new QgaSocketChannel(g.socket));
  if (g?.via === 'pve') return new GuestAgentTransport(new PveAgentChannel(g));
  return localTransport;
}

/** Whether a store's rest (after `<kind>:`) names a place on another machine: ssh:// or a guest agent. */
export function isRemotePlace(rest: string): boolean {
  return isSshLocation(rest) || isGuestAgentLocation(rest);
}

/** Split `/abs/path?a=1&b=2` into the path and its options (URL query parameters, values URL-decoded). */
export function splitStoreOptions(rest: string): { path: string; params: URLSearchParams } {
  const q = rest.indexOf('?');
  return { path: q >= 0 ? rest.slice(0, q) : rest, params: new URLSearchParams(q >= 0 ? rest.slice(q + 1) : '') };
}

/**
 * Refuse options other than `allowed`.
 * @throws AgentKeepError BadStore for an unknown option (the hint lists the allowed ones and `example`)
 */
export function checkStoreOptions(
  kind: string,
  params: URLSearchParams,
  spec: string,
  allowed: readonly string[],
  example: string,
): void {
  for (const k of params.keys()) {
    if (!allowed.includes(k)) {
      throw new AgentKeepError(
        'BadStore',
        `Unknown option "${k}" in store "${spec}".`,
        `${kind} stores take ${allowed.map((a) => `?${a}=`).join(', ')}, e.g. ${example}.`,
      );
    }
  }
}

/** Whether `p` is a directory (following symlinks). */
export function isDirectory(p: string): Promise<boolean> {
  return fs.stat(p).then(
    (st) => st.isDirectory(),
    () => false,
  );
}
