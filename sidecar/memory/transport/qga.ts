/**
 * A client of the QEMU guest agent protocol (QGA) over a unix socket: the host side of QEMU's
 * `-chardev socket,path=PATH,server=on,wait=off,id=qga0 -device virtio-serial -device
 * virtserialport,chardev=qga0,name=org.qemu.guest_agent.0` (or qemu-ga's own `-m unix-listen -p PATH`).
 * Source: QEMU docs/interop/qemu-ga-ref (qga/qapi-schema.json), observed with Debian's qemu-guest-agent
 * 1:7.2+dfsg-7+deb12u18+b3 (qemu-ga 7.2.22):
 *   - requests are JSON objects `{"execute": NAME, "arguments": {...}}`, answered one at a time, in
 *     order, by one line `{"return": ...}` or `{"error": {"class", "desc"}}`; no greeting, no events;
 *   - a fresh connection may see a stale answer of an earlier client, so it starts with
 *     `guest-sync-delimited {id}` after a 0xFF byte (which resets the agent's parser and is answered
 *     by a parse error "JSON parse error, stray '\uFFFD'"); the agent then sends 0xFF and
 *     `{"return": id}`: everything up to that 0xFF is discarded;
 *   - files: guest-file-open {path, mode} (fopen modes r, r+, w, w+, a, a+ with optional b; no "x";
 *     a directory opens and fails on read) -> handle; guest-file-read {handle, count <= 48 MiB}
 *     -> {count, buf-b64, eof}; guest-file-write {handle, buf-b64} -> {count, eof};
 *     guest-file-close {handle}. Errors read e.g. "failed to open file '/x' (mode: 'r'): No such file or directory";
 *   - commands: guest-exec {path, arg, env, input-data (base64), capture-output} -> {pid};
 *     guest-exec-status {pid} -> {exited:false} while running, then once {exited, exitcode | signal,
 *     out-data, err-data (base64), out-truncated, err-truncated} (qemu-ga keeps 16 MiB of each
 *     stream); after that answer the pid is forgotten ("Invalid parameter 'pid'"). A program that
 *     cannot be started: "Guest agent command failed, error was 'Failed to execute child process
 *     “X” (No such file or directory)'".
 * Without an agent in the guest the socket still accepts (QEMU owns it) but nothing answers: the
 * sync times out, and the error names the fix. The agent serves one client at a time: a second
 * connection waits (unanswered) until the first one closes.
 */
import { randomInt } from 'node:crypto';
import * as net from 'node:net';
import { AgentKeepError } from '../../core/errors';
import { fileKindAt } from '../../core/fsutil';

/** Connect and sync, ms (a guest without an agent never answers the sync). */
export const QGA_CONNECT_TIMEOUT_MS = 5_000;
/** One command's answer, ms. */
export const QGA_COMMAND_TIMEOUT_MS = 30_000;
/** Bytes per guest-file-read / guest-file-write (qemu-ga allows reads up to 48 MiB; 1 MiB keeps lines small). */
export const QGA_CHUNK_BYTES = 1 << 20;

/** An `error` answer of the agent. */
export class QgaCommandError extends Error {
  constructor(
    readonly command: string,
    readonly errorClass: string,
    readonly desc: string,
  ) {
    super(desc);
    this.name = 'QgaCommandError';
  }
}

/** The answer of guest-exec-status (base64 fields as the agent sends them). */
export interface QgaExecStatus {
  exited: boolean;
  exitcode?: number;
  signal?: number;
  'out-data'?: string;
  'err-data'?: string;
  'out-truncated'?: boolean;
  'err-truncated'?: boolean;
}

/** The hint for a guest whose agent does not answer. */
export const QGA_INSTALL_HINT =
  'Install and start qemu-guest-agent in the guest (Debian/Ubuntu: apt-get install qemu-guest-agent; ' +
  'systemctl enable --now qemu-guest-agent), and give the VM the agent channel (QEMU: -chardev socket,' +
  'path=SOCK,server=on,wait=off,id=qga0 -device virtio-serial -device virtserialport,chardev=qga0,' +
  'name=org.qemu.guest_agent.0; Proxmox: VM > Options > QEMU Guest Agent, then a full stop and start of the VM).';

/** A qga: store string that parses, for hints. */
const QGA_STORE_EXAMPLE = 'hermes:qga:/run/agent-vm/qga.sock:/root/.hermes';

/**
 * The error of a failed connect to a guest agent socket, naming what is wrong with the path and the
 * fix: no such file, a path that is no socket (Linux answers ECONNREFUSED for a regular file too, so
 * the path is looked at), a socket nobody listens on, no permission.
 */
export function qgaConnectError(socketPath: string, e: NodeJS.ErrnoException): AgentKeepError {
  const start =
    'Start the VM with a guest agent channel on that socket (QEMU: -chardev socket,path=' +
    `${socketPath},server=on,wait=off,id=qga0 -device virtio-serial -device virtserialport,` +
    'chardev=qga0,name=org.qemu.guest_agent.0)';
  const fixPath = `or correct the socket path (between "qga:" and ":/path/in/guest") in the store string, e.g. ${QGA_STORE_EXAMPLE}.`;
  const cannot = `Cannot connect to the guest agent socket ${socketPath}`;
  const kind = e.code === 'ECONNREFUSED' || e.code === 'ENOTSOCK' ? fileKindAt(socketPath) : 'socket';
  if (kind !== 'socket' && kind !== 'missing file')
    return new AgentKeepError(
      'BadStore',
      `${socketPath} is not a socket but a ${kind}: a qga: store names the VM's guest agent socket on this machine (the path= of its -chardev socket), not ${kind === 'directory' ? 'a folder' : 'a disk image or another file'}.`,
      `Give that socket's path in the store string, e.g. ${QGA_STORE_EXAMPLE}.`,
    );
  switch (e.code) {
    case 'ENOENT':
      return new AgentKeepError(
        'StoreNotFound',
        `${cannot}: no such socket (the VM is not running, or the path is wrong).`,
        `${start}, ${fixPath}`,
      );
    case 'ECONNREFUSED':
      return new AgentKeepError(
        'StoreNotFound',
        `${cannot}: nothing listens on it (the VM is not running; the socket file is left over).`,
        `${start}, ${fixPath}`,
      );
    case 'EACCES':
    case 'EPERM':
      return new AgentKeepError(
        'StoreNotFound',
        `${cannot}: permission denied.`,
        'Run AgentKeep as the user that started the VM, or give this user read and write access to the socket and its directory.',
      );
    default:
      return new AgentKeepError('StoreNotFound', `${cannot}: ${e.message}.`, `${start}, ${fixPath}`);
  }
}

/** One synced connection to a guest agent socket. Commands are queued (the agent answers in order). */
export class QgaClient {
  private buf = Buffer.alloc(0);
  private waiting?: { resolve: (line: string) => void; reject: (e: Error) => void };
  private queue: Promise<unknown> = Promise.resolve();
  private dead?: Error;

  private constructor(
    private readonly sock: net.Socket,
    readonly socketPath: string,
  ) {
    sock.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.pump();
    });
    const gone = (e?: Error): void => {
      this.dead ??= new AgentKeepError(
        'StoreNotFound',
        `The guest agent connection ${socketPath} closed${e ? `: ${e.message}` : ''}.`,
        'Check that the VM is still running; try again.',
      );
      this.waiting?.reject(this.dead);
      this.waiting = undefined;
    };
    sock.on('error', gone);
    sock.on('close', () => gone());
  }

  /** Whether the connection is still usable. */
  get alive(): boolean {
    return !this.dead;
  }

  /**
   * Connect to `socketPath` and sync (0xFF + guest-sync-delimited).
   * @throws AgentKeepError StoreNotFound (no such socket, refused: the VM is not running), BadStore
   *   (the path is a regular file or a folder, not a socket: qgaConnectError) or
   *   Unsupported (connected, but no agent answers within timeoutMs: the hint names the fix)
   */
  static async connect(socketPath: string, timeoutMs = QGA_CONNECT_TIMEOUT_MS): Promise<QgaClient> {
    const sock = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(socketPath);
      s.once('connect', () => resolve(s));
      s.once('error', (e: NodeJS.ErrnoException) => reject(qgaConnectError(socketPath, e)));
    });
    const c = new QgaClient(sock, socketPath);
    try {
      await c.sync(timeoutMs);
    } catch (e) {
      c.close();
      throw e;
    }
    return c;
  }

  /** Close the socket. */
  close(): void {
    this.dead ??= new Error('closed');
    this.sock.destroy();
  }

  /** Let the socket not keep the process alive (idle in a pool), or again keep it. */
  ref(on: boolean): void {
    if (on) this.sock.ref();
    else this.sock.unref();
  }

  private pump(): void {
    if (!this.waiting) return;
    const nl = this.buf.indexOf(0x0a);
    if (nl < 0) return;
    const line = this.buf.subarray(0, nl).toString('utf8');
    this.buf = this.buf.subarray(nl + 1);
    const w = this.waiting;
    this.waiting = undefined;
    w.resolve(line);
  }

  private nextLine(timeoutMs: number, what: string): Promise<string> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiting = undefined;
        const e = new AgentKeepError(
          'Unsupported',
          `The guest agent at ${this.socketPath} did not answer ${what} within ${Math.round(timeoutMs / 1000)} s: ` +
            'no qemu-guest-agent runs in the guest, or it hangs. Nothing was read or written.',
          QGA_INSTALL_HINT,
        );
        this.dead = e;
        this.sock.destroy();
        reject(e);
      }, timeoutMs);
      this.waiting = {
        resolve: (l) => {
          clearTimeout(t);
          resolve(l);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      };
      this.pump();
    });
  }

  private async sync(timeoutMs: number): Promise<void> {
    const id = randomInt(1, 2 ** 31);
    this.sock.write(
      Buffer.concat([
        Buffer.from([0xff]),
        Buffer.from(JSON.stringify({ execute: 'guest-sync-delimited', arguments: { id } }) + '\n'),
      ]),
    );
    const end = Date.now() + timeoutMs;
    // discard everything up to the agent's 0xFF, then read lines until {"return": id}
    for (;;) {
      const ff = this.buf.indexOf(0xff);
      if (ff >= 0) {
        this.buf = this.buf.subarray(ff + 1);
        break;
      }
      this.buf = Buffer.alloc(0);
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(
          () => {
            cleanup();
            reject(
              new AgentKeepError(
                'Unsupported',
                `No QEMU guest agent answers on ${this.socketPath} (guest-sync-delimited, waited ` +
                  `${Math.round(timeoutMs / 1000)} s): qemu-guest-agent is not installed or not running in the guest, ` +
                  'or another client keeps the socket (the agent serves one client at a time). ' +
                  'Nothing was read or written.',
                QGA_INSTALL_HINT,
              ),
            );
          },
          Math.max(1, end - Date.now()),
        );
        const onData = (): void => {
          cleanup();
          resolve();
        };
        const onClose = (): void => {
          cleanup();
          reject(this.dead ?? new Error('closed'));
        };
        const cleanup = (): void => {
          clearTimeout(t);
          this.sock.off('data', onData);
          this.sock.off('close', onClose);
        };
        this.sock.on('data', onData);
        this.sock.on('close', onClose);
      });
    }
    for (;;) {
      const line = await this.nextLine(Math.max(1, end - Date.now()), 'guest-sync-delimited');
      try {
        if ((JSON.parse(line) as { return?: unknown }).return === id) return;
      } catch {
        /* a stale partial line */
      }
    }
  }

  /**
   * Run one command (queued behind the ones before it).
   * @throws QgaCommandError for an `error` answer; AgentKeepError when the agent stops answering
   */
  call<T>(command: string, args?: Record<string, unknown>, timeoutMs = QGA_COMMAND_TIMEOUT_MS): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.dead) throw this.dead;
      this.sock.write(JSON.stringify(args ? { execute: command, arguments: args } : { execute: command }) + '\n');
      const line = await this.nextLine(timeoutMs, command);
      const msg = JSON.parse(line) as { return?: T; error?: { class: string; desc: string } };
      if (msg.error) throw new QgaCommandError(command, msg.error.class, msg.error.desc);
      return msg.return as T;
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }
}

/** A Node-style error code for an agent's or a shell's error text (ENOENT for "No such file or directory" ...). */
export function errnoOf(text: string): string {
  const table: Array<[RegExp, string]> = [
    [/No such file or directory/i, 'ENOENT'],
    [/Permission denied/i, 'EACCES'],
    [/Operation not permitted/i, 'EPERM'],
    [/Not a directory/i, 'ENOTDIR'],
    [/Is a directory/i, 'EISDIR'],
    [/File exists/i, 'EEXIST'],
    [/Directory not empty/i, 'ENOTEMPTY'],
    [/Read-only file system/i, 'EROFS'],
    [/No space left/i, 'ENOSPC'],
    [/Invalid argument/i, 'EINVAL'],
  ];
  return table.find(([re]) => re.test(text))?.[1] ?? 'EIO';
}
