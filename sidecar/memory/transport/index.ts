/**
 * The file transport of a memory store: how an adapter reaches the machine its files are on. The
 * store adapters (Hermes first) do every read, write, lock and probe of their files through it, so a
 * store on another machine works like a local one:
 *   - `localTransport`: this machine, straight node:fs and child processes (what the adapters did
 *     before; errors are Node's own, so local behaviour and messages are unchanged);
 *   - `SshTransport` (./ssh.ts): another machine over SSH (npm ssh2, pure JS): SFTP for the files,
 *     exec for the rest (flock, sha256sum, stat, probes).
 * Paths are absolute paths on the transport's machine. Errors of file operations carry a Node-style
 * `code` (ENOENT, EACCES, EPERM, EEXIST, ENOTDIR, EISDIR ...) so adapters handle both alike; failures
 * of the connection itself (unreachable host, refused host key or login, timeouts) are
 * AgentKeepErrors that name the host and the step.
 */
import { spawn } from 'node:child_process';
import { constants as fsc, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fsyncDir } from '../../core/fsutil';
import { hashFile } from '../../core/objects';

/** What a stat of a path says (node:fs Stats satisfies it). */
export interface FileStat {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  /** Bytes. */
  size: number;
  /** Mode bits including the file type (st_mode). */
  mode: number;
  /** Modification time, ms since the epoch (SFTP: whole seconds). */
  mtimeMs: number;
}

/** One directory entry (node:fs Dirent satisfies it). */
export interface DirEntry {
  name: string;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/**
 * A change stamp of a file: size, modification time at the best resolution the machine gives
 * (nanoseconds locally and through `stat` over exec) and inode; equal stamps mean "unchanged".
 */
export interface FileStamp {
  size: number;
  mtime: string;
  ino: string;
}

/** What a finished command printed and how it ended. */
export interface ExecResult {
  /** Exit status; null when it was killed by a signal or timed out. */
  code: number | null;
  stdout: Buffer;
  stderr: Buffer;
}

/** A running command (a held lock: `flock ... sh -c 'echo locked; read _'`). */
export interface RunningCommand {
  /** Text printed on stdout. */
  onStdout(cb: (chunk: Buffer) => void): void;
  /** Resolves with the exit status (null: signal) once the command ended and its streams closed. */
  readonly exited: Promise<number | null>;
  /** Close its stdin (the lock's `read _` then returns and the command exits). */
  endStdin(): void;
  /** Stop it (kill / close the channel). */
  kill(): void;
}

/** The file and process operations a store adapter needs on the machine its files are on. */
export interface FileTransport {
  /** Who and where, for messages: "this machine", "root@10.0.0.5:22". */
  readonly where: string;
  /** The login that reads and writes the files (the sidecar's user locally, the SSH user). */
  readonly user: string;
  /** True when the files are on another machine (no local path reaches them). */
  readonly remote: boolean;
  /** How a path on this machine is shown to people: the path itself, or ssh://user@host:port/path. */
  display(abs: string): string;
  /** stat (follows symlinks). @throws ENOENT-coded errors as fs.stat */
  stat(abs: string): Promise<FileStat>;
  /** lstat. @throws as fs.lstat */
  lstat(abs: string): Promise<FileStat>;
  /** The target of a symbolic link. @throws EINVAL-ish errors for a non-link, ENOENT */
  readlink(abs: string): Promise<string>;
  /** The canonical absolute path (symlinks resolved). @throws ENOENT */
  realpath(abs: string): Promise<string>;
  /** The whole file. @throws ENOENT, EACCES, EISDIR ... */
  readFile(abs: string): Promise<Buffer>;
  /** Entries of a directory. @throws ENOENT, ENOTDIR, EACCES */
  readdir(abs: string): Promise<DirEntry[]>;
  /** sha256 (hex) of a file's content. @throws as readFile */
  hashFile(abs: string): Promise<string>;
  /** Change stamps of files (undefined for a file that does not exist), in one round trip. */
  stamps(abs: readonly string[]): Promise<Array<FileStamp | undefined>>;
  /** Copy a file of this machine to a local file `dest` (created or replaced). @throws as readFile */
  download(abs: string, dest: string): Promise<void>;
  /**
   * Write a new file (flag `wx`: it must not exist) with `mode`, content from bytes or from a local
   * file, and fsync it. @throws EEXIST, EACCES, ENOENT (no directory) ...
   */
  writeNew(abs: string, data: Uint8Array | { localFile: string }, mode: number): Promise<void>;
  /** Create the file empty when missing, leave it as is otherwise (open "a"). @throws EACCES, EROFS ... */
  touch(abs: string): Promise<void>;
  /** Atomic rename over an existing file (POSIX rename). */
  rename(from: string, to: string): Promise<void>;
  /** Remove a file or a directory tree; no error when missing. */
  rm(abs: string, opts?: { recursive?: boolean }): Promise<void>;
  /** Remove an empty directory. @throws ENOTEMPTY ... */
  rmdir(abs: string): Promise<void>;
  /** mkdir -p. */
  mkdirp(abs: string): Promise<void>;
  chmod(abs: string, mode: number): Promise<void>;
  /** Make a rename inside `dir` durable where the machine allows it (best effort, never throws). */
  fsyncDir(dir: string): Promise<void>;
  /**
   * Run a command (argv, no shell on this side) to its end, `stdin` written and closed.
   * @throws when it cannot be started at all (ENOENT-coded error locally: no such program) or the
   *   machine cannot be reached; a non-zero exit is a result, not an error
   */
  exec(
    argv: readonly string[],
    opts?: { stdin?: Uint8Array; timeoutMs?: number; env?: Record<string, string> },
  ): Promise<ExecResult>;
  /** Start a long-running command with piped stdin/stdout (a lock holder). */
  spawn(argv: readonly string[]): Promise<RunningCommand>;
}

/** Options of `exec` (for implementations). */
export type ExecOptions = NonNullable<Parameters<FileTransport['exec']>[1]>;

/**
 * The whole of a local file. Opened non-blocking and checked with fstat, so a FIFO, socket or device
 * put where a store keeps a file (`index.pkl`, `MEMORY.md`, ...) is refused at once instead of hanging
 * the read until a writer comes (a FIFO) or reading without end (/dev/zero).
 * @param abs absolute path
 * @returns the file's bytes
 * @throws Node's errors (ENOENT, EACCES, EISDIR for a directory ...); `EINVAL` "<abs> is a FIFO, not a
 *   regular file" for any other non-regular file
 */
export async function readLocalFile(abs: string): Promise<Buffer> {
  const fh = await fs.open(abs, fsc.O_RDONLY | fsc.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile() && !st.isDirectory()) {
      const kind = st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device';
      const err: NodeJS.ErrnoException = new Error(`${abs} is ${kind}, not a regular file`);
      err.code = 'EINVAL';
      throw err;
    }
    return await fh.readFile(); // a directory: EISDIR, as fs.readFile
  } finally {
    await fh.close();
  }
}

/** This machine: node:fs and child processes, errors unchanged. */
export const localTransport: FileTransport = {
  where: 'this machine',
  get user() {
    return os.userInfo().username;
  },
  remote: false,
  display: (abs) => abs,
  stat: (abs) => fs.stat(abs),
  lstat: (abs) => fs.lstat(abs),
  readlink: (abs) => fs.readlink(abs),
  realpath: (abs) => fs.realpath(abs),
  readFile: readLocalFile,
  readdir: (abs) => fs.readdir(abs, { withFileTypes: true }),
  hashFile: (abs) => hashFile(abs),
  async stamps(files) {
    return Promise.all(
      files.map(async (p) => {
        try {
          const st = await fs.stat(p, { bigint: true });
          return { size: Number(st.size), mtime: String(st.mtimeNs), ino: String(st.ino) };
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw e;
        }
      }),
    );
  },
  download: (abs, dest) => fs.copyFile(abs, dest),
  async writeNew(abs, data, mode) {
    if ('localFile' in data) {
      await fs.copyFile(data.localFile, abs, fs.constants.COPYFILE_EXCL);
      await fs.chmod(abs, mode);
      const h = await fs.open(abs, 'r+');
      await h.sync().finally(() => h.close());
      return;
    }
    await fs.writeFile(abs, data, { mode, flag: 'wx' });
    const h = await fs.open(abs, 'r+');
    await h.sync().finally(() => h.close());
  },
  async touch(abs) {
    const fh = await fs.open(abs, 'a');
    await fh.close();
  },
  rename: (from, to) => fs.rename(from, to),
  rm: (abs, opts) => fs.rm(abs, { force: true, recursive: !!opts?.recursive }),
  rmdir: (abs) => fs.rmdir(abs),
  mkdirp: async (abs) => {
    await fs.mkdir(abs, { recursive: true });
  },
  chmod: (abs, mode) => fs.chmod(abs, mode),
  fsyncDir: (dir) => fsyncDir(dir),
  exec(argv, opts = {}) {
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0], argv.slice(1), {
        stdio: ['pipe', 'pipe', 'pipe'],
        ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timer: NodeJS.Timeout | undefined;
      if (opts.timeoutMs) timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => err.push(d));
      child.stdin.on('error', () => undefined);
      child.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err) });
      });
      child.stdin.end(opts.stdin ?? undefined);
    });
  },
  spawn(argv) {
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
      child.stdin.on('error', () => undefined); // EPIPE when it already exited
      const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
      child.once('error', reject);
      child.once('spawn', () =>
        resolve({
          onStdout: (cb) => child.stdout.on('data', cb),
          exited,
          endStdin: () => child.stdin.end(),
          kill: () => child.kill(),
        }),
      );
    });
  },
};

/** Join a root and a store-relative POSIX path on the transport's machine. */
export function joinOn(io: FileTransport, root: string, rel: string): string {
  return io.remote ? path.posix.join(root, rel) : path.join(root, ...rel.split('/'));
}

/** The path module of the transport's machine (POSIX for a remote one). */
export function pathOn(io: FileTransport): typeof path.posix {
  return io.remote ? path.posix : path;
}

/** Quote one word for a POSIX shell (single quotes; a ' inside becomes '\''). */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
