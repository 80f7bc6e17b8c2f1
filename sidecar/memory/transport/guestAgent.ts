/**
 * A memory store's files inside a VM without SSH, through the QEMU guest agent: a FileTransport over
 * a `GuestAgentChannel`, which reads and writes whole files and runs commands in the guest. Two
 * channels exist:
 *   - `QgaSocketChannel` (here): the guest agent's own socket on this machine (QGA protocol, ./qga.ts),
 *     store strings `<kind>:qga:/abs/qga.sock:/abs/path/in/guest`;
 *   - `PveAgentChannel` (./pveAgent.ts): Proxmox VE's agent/file-read, agent/file-write, agent/exec and
 *     agent/exec-status, store strings `<kind>:pve-agent://HOST[:PORT]/NODE/VMID/abs/path`.
 * Files move through the channel (binary-safe, chunked); everything else (stat, lstat, readlink,
 * realpath, readdir, change stamps, rename, rm, mkdir -p, chmod, sha256) is one `sh -c` script run
 * in the guest with guest-exec, whose error text is mapped to Node error codes (ENOENT ...).
 *
 * Differences from SSH, on purpose:
 *   - no streaming stdin and no output before a command ends (guest-exec returns the output once the
 *     process exited), so a held lock (`spawn`) is a command in the guest whose stdin is fed by a
 *     watcher loop on a lease file: `endStdin()` removes the lease, and a lease not renewed for
 *     LEASE_S seconds (the sidecar died) ends the holder, so Hermes' flock never outlives AgentKeep
 *     by more than that; its stdout goes to a file in the guest that is read while it runs;
 *   - `writeNew` creates the file with the shell's noclobber (O_EXCL) first, then writes through the
 *     channel (guest-file-open has no exclusive mode);
 *   - the login is the agent's (root on Linux guests).
 */
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import type { DirEntry, ExecOptions, ExecResult, FileStamp, FileStat, FileTransport, RunningCommand } from './index';
import { errnoOf, QgaClient, QgaCommandError, QGA_CHUNK_BYTES, type QgaExecStatus } from './qga';

/** Seconds a lock holder in the guest outlives its last lease renewal (the sidecar renews every LEASE_S / 4). */
export const LEASE_S = 20;
/**
 * An idle guest agent connection is closed after this, ms. The agent serves one client at a time (a
 * second one waits until the first disconnects: observed with qemu-ga 7.2, unix-listen), so the
 * socket is held only while operations run and for 2 s after (shorter cost more reconnects in the VM
 * test: 300 ms made its list/show test 5.4 s -> 9.4 s); another client waits at most that long,
 * within its own 5 s connect timeout.
 */
const IDLE_CLOSE_MS = 2_000;

/** What a guest agent path needs: whole files and commands in the guest. */
export interface GuestAgentChannel {
  /** For messages: "the guest agent of VM 101 on pve.lan", "the guest agent at /run/vm/qga.sock". */
  readonly where: string;
  /** How a path in the guest is shown, the path last: `pve-agent://pve.lan:8006/pve1/101/root/.hermes`, `qga:/run/vm/qga.sock:/root/.hermes`. */
  display(abs: string): string;
  /** The whole file, in chunks of the channel's size. @throws Node-coded errors (ENOENT, EACCES, EISDIR ...) */
  readFile(abs: string): Promise<Buffer>;
  /** Create or truncate `abs` and write `data` (chunked where the channel limits one call). @throws Node-coded errors */
  writeFile(abs: string, data: Buffer): Promise<void>;
  /**
   * Run argv (path + args) to its end; a program that cannot be started is code 127 with the agent's
   * text in stderr. `pollMaxMs`: the longest wait between guest-exec-status polls (default 100; a
   * long-running lock holder polls less often).
   */
  exec(argv: readonly string[], opts?: ExecOptions, pollMaxMs?: number): Promise<ExecResult>;
}

/** A Node-style error. */
function coded(message: string, code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/** The error of a failed script op: its stderr's first line, coded by errnoOf (or the code it printed). */
function opError(step: string, shown: string, r: ExecResult): NodeJS.ErrnoException {
  const text = r.stderr.toString('utf8').trim().split('\n')[0] ?? '';
  const printed = /^(E[A-Z]+)$/.exec(text)?.[1];
  const code = printed ?? errnoOf(text);
  const what: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    ENOTDIR: 'not a directory',
    EISDIR: 'is a directory',
    EEXIST: 'file exists',
    ENOTEMPTY: 'directory not empty',
    EINVAL: 'not a symbolic link',
  };
  return coded(`${step} ${shown}: ${what[code] ?? (text || `exit ${r.code}`)}`, code);
}

/**
 * The shell side of the metadata operations, run as `sh -c SCRIPT sh OP ARGS...` (POSIX sh, coreutils
 * or busybox). Errors print a code (ENOENT ...) or the tool's message on stderr and exit non-zero.
 */
const OPS = String.raw`
op=$1; shift
there() { [ -e "$1" ] || [ -L "$1" ]; }
case "$op" in
stat) [ -e "$1" ] || { there "$1" && echo ELOOP >&2 || echo ENOENT >&2; exit 2; }; exec stat -L -c '%f %s %Y' -- "$1" ;;
lstat) there "$1" || { echo ENOENT >&2; exit 2; }; exec stat -c '%f %s %Y' -- "$1" ;;
readlink) there "$1" || { echo ENOENT >&2; exit 2; }; [ -L "$1" ] || { echo EINVAL >&2; exit 2; }; exec readlink -- "$1" ;;
realpath) [ -e "$1" ] || { echo ENOENT >&2; exit 2; }; readlink -f -- "$1" ;;
readdir) [ -e "$1" ] || { echo ENOENT >&2; exit 2; }; [ -d "$1" ] || { echo ENOTDIR >&2; exit 2; }
  cd -- "$1" || exit 2
  for f in * .*; do
    case "$f" in .|..) continue ;; esac
    there "$f" || continue
    printf '%s %s\n' "$(stat -c %f -- "$f")" "$(printf '%s' "$f" | od -An -v -tx1 | tr -d ' \n')"
  done ;;
stamps) for f in "$@"; do stat -L -c '%s %y %i' -- "$f" 2>/dev/null || echo -; done ;;
touch) [ -d "$1" ] && { echo EISDIR >&2; exit 2; }; : >> "$1" ;;
create) mode=$1; shift; set -C; : > "$1" && chmod "$mode" -- "$1" ;;
rename) exec mv -f -- "$1" "$2" ;;
rm) there "$1" || exit 0; if [ -d "$1" ] && [ ! -L "$1" ]; then if [ "$2" = r ]; then exec rm -rf -- "$1"; else exec rmdir -- "$1"; fi; fi; exec rm -f -- "$1" ;;
rmdir) exec rmdir -- "$1" ;;
mkdirp) exec mkdir -p -- "$1" ;;
chmod) exec chmod "$1" -- "$2" ;;
sync) sync -- "$@" 2>/dev/null || sync; exit 0 ;;
sha256) exec sha256sum -b -- "$1" ;;
*) echo "unknown op $op" >&2; exit 2 ;;
esac`;

/**
 * The lock holder's wrapper: `sh -c HOLD sh LEASE OUT SECONDS ARGV...` runs ARGV with stdin fed by a
 * loop that ends when LEASE is removed or not renewed for SECONDS, stdout to the file OUT.
 */
const HOLD = String.raw`
lease=$1; out=$2; ttl=$3; shift 3
: > "$lease"; : > "$out"
stale() { now=$(date +%s); m=$(stat -c %Y -- "$lease" 2>/dev/null) || return 0; [ $((now - m)) -ge "$ttl" ]; }
( while [ -e "$lease" ] && ! stale; do sleep 0.2 2>/dev/null || sleep 1; done ) | ( "$@" > "$out" 2>/dev/null; rc=$?; rm -f -- "$lease"; exit $rc )`;

/** stat-like view of `%f %s %Y` (hex mode, size, mtime s). */
function statOfLine(line: string): FileStat {
  const [hex, size, mtime] = line.trim().split(' ');
  const mode = parseInt(hex, 16);
  const type = mode & 0o170000;
  return {
    isFile: () => type === 0o100000,
    isDirectory: () => type === 0o040000,
    isSymbolicLink: () => type === 0o120000,
    isFIFO: () => type === 0o010000,
    isSocket: () => type === 0o140000,
    size: Number(size),
    mode,
    mtimeMs: Number(mtime) * 1000,
  };
}

/** A store's files inside a VM through its guest agent (see the module doc). No I/O until the first call. */
export class GuestAgentTransport implements FileTransport {
  readonly remote = true;
  /** The guest agent runs as root in Linux guests. */
  readonly user = 'root';
  readonly where: string;

  /** Seconds a lock holder outlives its last renewal (default LEASE_S). */
  private readonly leaseS: number;

  constructor(
    readonly channel: GuestAgentChannel,
    opts: { leaseS?: number } = {},
  ) {
    this.where = channel.where;
    this.leaseS = opts.leaseS ?? LEASE_S;
  }

  display(abs: string): string {
    return this.channel.display(abs);
  }

  /** Run one op of the OPS script. */
  private op(op: string, args: readonly string[]): Promise<ExecResult> {
    return this.channel.exec(['sh', '-c', OPS, 'sh', op, ...args]);
  }

  private async opOk(op: string, step: string, abs: string, args: readonly string[]): Promise<string> {
    const r = await this.op(op, args);
    if (r.code !== 0) throw opError(step, this.display(abs), r);
    return r.stdout.toString('utf8');
  }

  async stat(abs: string): Promise<FileStat> {
    return statOfLine(await this.opOk('stat', 'stat', abs, [abs]));
  }

  async lstat(abs: string): Promise<FileStat> {
    return statOfLine(await this.opOk('lstat', 'lstat', abs, [abs]));
  }

  async readlink(abs: string): Promise<string> {
    return (await this.opOk('readlink', 'readlink', abs, [abs])).replace(/\n$/, '');
  }

  async realpath(abs: string): Promise<string> {
    return (await this.opOk('realpath', 'resolve', abs, [abs])).replace(/\n$/, '');
  }

  async readFile(abs: string): Promise<Buffer> {
    return this.channel.readFile(abs);
  }

  async readdir(abs: string): Promise<DirEntry[]> {
    const out = await this.opOk('readdir', 'list', abs, [abs]);
    return out
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [hex, name] = l.split(' ');
        const st = statOfLine(`${hex} 0 0`);
        return {
          name: Buffer.from(name ?? '', 'hex').toString('utf8'),
          isFile: () => st.isFile(),
          isDirectory: () => st.isDirectory(),
          isSymbolicLink: () => st.isSymbolicLink(),
        };
      });
  }

  async hashFile(abs: string): Promise<string> {
    const r = await this.op('sha256', [abs]);
    const m = /^([0-9a-f]{64})\b/.exec(r.stdout.toString('latin1'));
    if (r.code === 0 && m) return m[1];
    // no sha256sum there, or an error: read it (and fail with its coded error)
    return createHash('sha256')
      .update(await this.readFile(abs))
      .digest('hex');
  }

  async stamps(files: readonly string[]): Promise<Array<FileStamp | undefined>> {
    if (!files.length) return [];
    const r = await this.op('stamps', files);
    const lines = r.stdout.toString('utf8').split('\n');
    if (r.code !== 0 || lines.length <= files.length)
      throw coded(`stat in ${this.where} failed: ${r.stderr.toString().trim() || `exit ${r.code}`}`, 'EIO');
    return files.map((_, i) => {
      const m = /^(\d+) (.+) (\d+)$/.exec(lines[i]);
      return m ? { size: Number(m[1]), mtime: m[2], ino: m[3] } : undefined;
    });
  }

  async download(abs: string, dest: string): Promise<void> {
    await fs.writeFile(dest, await this.readFile(abs));
  }

  async writeNew(abs: string, data: Uint8Array | { localFile: string }, mode: number): Promise<void> {
    const buf = 'localFile' in data ? await fs.readFile(data.localFile) : Buffer.from(data);
    const r = await this.op('create', [(mode & 0o7777).toString(8), abs]);
    if (r.code !== 0) {
      const err = opError('create', this.display(abs), r);
      // noclobber's refusal reads "cannot overwrite existing file" / "File exists"
      if (/exist/i.test(r.stderr.toString())) err.code = 'EEXIST';
      throw err;
    }
    try {
      await this.channel.writeFile(abs, buf);
      await this.op('sync', [abs]);
    } catch (e) {
      await this.op('rm', [abs]).catch(() => undefined); // nothing half-written stays
      throw e;
    }
  }

  async touch(abs: string): Promise<void> {
    await this.opOk('touch', 'open', abs, [abs]);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.opOk('rename', 'rename', from, [from, to]);
  }

  async rm(abs: string, opts: { recursive?: boolean } = {}): Promise<void> {
    await this.opOk('rm', 'remove', abs, [abs, opts.recursive ? 'r' : '']);
  }

  async rmdir(abs: string): Promise<void> {
    await this.opOk('rmdir', 'remove directory', abs, [abs]);
  }

  async mkdirp(abs: string): Promise<void> {
    await this.opOk('mkdirp', 'create directory', abs, [abs]);
  }

  async chmod(abs: string, mode: number): Promise<void> {
    await this.opOk('chmod', 'chmod', abs, [(mode & 0o7777).toString(8), abs]);
  }

  async fsyncDir(dir: string): Promise<void> {
    await this.op('sync', [dir]).catch(() => undefined);
  }

  exec(argv: readonly string[], opts?: ExecOptions): Promise<ExecResult> {
    return this.channel.exec(argv, opts);
  }

  /**
   * A long-running command in the guest (a lock holder): see the module doc. stdout is polled from a
   * file in the guest's /tmp every 100 ms until the command ends.
   */
  async spawn(argv: readonly string[]): Promise<RunningCommand> {
    const tag = randomBytes(6).toString('hex');
    const lease = `/tmp/.agentkeep-lease-${tag}`;
    const out = `/tmp/.agentkeep-out-${tag}`;
    const listeners: Array<(b: Buffer) => void> = [];
    let seen = 0;
    let ended = false;
    const run = this.channel.exec(
      ['sh', '-c', HOLD, 'sh', lease, out, String(this.leaseS), ...argv],
      { timeoutMs: 24 * 3600_000 },
      250,
    );
    const poll = async (): Promise<void> => {
      const b = await this.channel.readFile(out).catch(() => undefined);
      if (b && b.length > seen) {
        const chunk = b.subarray(seen);
        seen = b.length;
        for (const l of listeners) l(chunk);
      }
    };
    const renew = setInterval(
      () => void this.channel.exec(['touch', '-c', '--', lease]).catch(() => undefined),
      (this.leaseS * 1000) / 4,
    );
    // its output every 100 ms until it printed something (the lock's "locked"), then every 500 ms:
    // every poll is a request to the agent, which serves one client at a time
    let timer = setInterval(() => {
      void poll().then(() => {
        if (seen && !ended) {
          clearInterval(timer);
          timer = setInterval(() => void poll(), 500);
        }
      });
    }, 100);
    const exited = run.then(
      async (r) => {
        ended = true;
        clearInterval(timer);
        clearInterval(renew);
        await poll();
        await this.channel.exec(['rm', '-f', '--', out, lease]).catch(() => undefined);
        return r.code;
      },
      () => {
        ended = true;
        clearInterval(timer);
        clearInterval(renew);
        return null;
      },
    );
    const stop = (): void => {
      clearInterval(renew);
      if (!ended) void this.channel.exec(['rm', '-f', '--', lease]).catch(() => undefined);
    };
    return {
      onStdout: (cb) => listeners.push(cb),
      exited,
      endStdin: stop,
      kill: stop,
    };
  }
}

/** How long to wait between guest-exec-status polls: 5 ms doubling to `maxMs` (100). */
export function* execPollDelays(maxMs = 100): Generator<number> {
  for (let d = 5; ; d = Math.min(maxMs, d * 2)) yield d;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `qga:/run/vm/qga.sock:/root/.hermes` (the socket, a colon, the path in the guest, URI-encoded by part). */
export function qgaUrl(socket: string, p: string): string {
  return `qga:${socket}:${p.split('/').map(encodeURIComponent).join('/')}`;
}

const pool = new Map<
  string,
  { client?: QgaClient; connecting?: Promise<QgaClient>; active: number; idle?: NodeJS.Timeout }
>();

/** Close every guest agent socket connection now (tests). */
export function closeQgaConnections(): void {
  for (const e of pool.values()) {
    clearTimeout(e.idle);
    e.client?.close();
  }
  pool.clear();
}

/** The guest agent's own socket on this machine (QGA protocol; one shared connection per socket). */
export class QgaSocketChannel implements GuestAgentChannel {
  readonly where: string;

  constructor(
    readonly socket: string,
    private readonly timeouts: { connectMs?: number; opMs?: number } = {},
  ) {
    this.where = `the guest agent at ${socket}`;
  }

  display(abs: string): string {
    return qgaUrl(this.socket, abs);
  }

  /** Run `f` on the shared connection (opened on first use, closed when idle). */
  private async use<T>(f: (c: QgaClient) => Promise<T>): Promise<T> {
    let e = pool.get(this.socket);
    if (!e) {
      e = { active: 0 };
      pool.set(this.socket, e);
    }
    const entry = e;
    entry.active++;
    clearTimeout(entry.idle);
    try {
      if (!entry.client?.alive) {
        entry.client = undefined;
        entry.connecting ??= QgaClient.connect(this.socket, this.timeouts.connectMs).finally(() => {
          entry.connecting = undefined;
        });
        entry.client = await entry.connecting;
      }
      entry.client.ref(true);
      return await f(entry.client);
    } finally {
      if (--entry.active === 0) {
        entry.client?.ref(false);
        entry.idle = setTimeout(() => {
          entry.client?.close();
          if (pool.get(this.socket) === entry) pool.delete(this.socket);
        }, IDLE_CLOSE_MS);
        entry.idle.unref();
      }
    }
  }

  /** A coded error for an agent's file error. */
  private fileError(step: string, abs: string, e: unknown): unknown {
    if (!(e instanceof QgaCommandError)) return e;
    return coded(`${step} ${this.display(abs)}: ${e.desc}`, errnoOf(e.desc));
  }

  async readFile(abs: string): Promise<Buffer> {
    return this.use(async (c) => {
      const h = await c
        .call<number>('guest-file-open', { path: abs, mode: 'r' }, this.timeouts.opMs)
        .catch((e: unknown) => {
          throw this.fileError('open', abs, e);
        });
      try {
        const parts: Buffer[] = [];
        for (;;) {
          const r = await c
            .call<{ count: number; 'buf-b64': string; eof: boolean }>(
              'guest-file-read',
              { handle: h, count: QGA_CHUNK_BYTES },
              this.timeouts.opMs,
            )
            .catch((e: unknown) => {
              throw this.fileError('read', abs, e);
            });
          parts.push(Buffer.from(r['buf-b64'], 'base64'));
          if (r.eof || r.count === 0) break;
        }
        return Buffer.concat(parts);
      } finally {
        await c.call('guest-file-close', { handle: h }).catch(() => undefined);
      }
    });
  }

  async writeFile(abs: string, data: Buffer): Promise<void> {
    await this.use(async (c) => {
      const h = await c
        .call<number>('guest-file-open', { path: abs, mode: 'w' }, this.timeouts.opMs)
        .catch((e: unknown) => {
          throw this.fileError('open', abs, e);
        });
      try {
        for (let pos = 0; pos < data.length; pos += QGA_CHUNK_BYTES) {
          const chunk = data.subarray(pos, pos + QGA_CHUNK_BYTES);
          const r = await c
            .call<{ count: number }>(
              'guest-file-write',
              { handle: h, 'buf-b64': chunk.toString('base64') },
              this.timeouts.opMs,
            )
            .catch((e: unknown) => {
              throw this.fileError('write', abs, e);
            });
          if (r.count !== chunk.length)
            throw coded(`write ${this.display(abs)}: ${r.count} of ${chunk.length} bytes written`, 'EIO');
        }
        await c.call('guest-file-flush', { handle: h }).catch((e: unknown) => {
          throw this.fileError('flush', abs, e);
        });
      } finally {
        await c.call('guest-file-close', { handle: h }).catch(() => undefined);
      }
    });
  }

  async exec(argv: readonly string[], opts: ExecOptions = {}, pollMaxMs = 100): Promise<ExecResult> {
    // guest-exec's `env` replaces the whole environment (no PATH): variables go through env(1)
    const vars = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const full = vars.length ? ['env', ...vars, ...argv] : [...argv];
    const started = await this.use(async (c) => {
      try {
        return await c.call<{ pid: number }>(
          'guest-exec',
          {
            path: full[0],
            arg: full.slice(1),
            'capture-output': true,
            ...(opts.stdin ? { 'input-data': Buffer.from(opts.stdin).toString('base64') } : {}),
          },
          this.timeouts.opMs,
        );
      } catch (e) {
        if (e instanceof QgaCommandError && /Failed to execute child process/i.test(e.desc))
          return { pid: -1, notFound: e.desc };
        throw e;
      }
    });
    if ('notFound' in started)
      return { code: 127, stdout: Buffer.alloc(0), stderr: Buffer.from(String(started.notFound)) };
    const end = opts.timeoutMs ? Date.now() + opts.timeoutMs : Infinity;
    for (const d of execPollDelays(pollMaxMs)) {
      const st = await this.use((c) =>
        c.call<QgaExecStatus>('guest-exec-status', { pid: started.pid }, this.timeouts.opMs),
      );
      if (st.exited) {
        return {
          code: st.exitcode ?? null,
          stdout: Buffer.from(st['out-data'] ?? '', 'base64'),
          stderr: Buffer.from(st['err-data'] ?? '', 'base64'),
        };
      }
      if (Date.now() > end) return { code: null, stdout: Buffer.alloc(0), stderr: Buffer.from('timed out') };
      await sleep(d);
    }
    throw new Error('unreachable: execPollDelays never ends');
  }
}
