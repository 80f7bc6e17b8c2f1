/**
 * A small QMP client (QEMU Machine Protocol) over a unix socket: JSON objects, one per line
 * (QEMU ends each with "\r\n"). Sequence: the server's greeting `{"QMP": {version, capabilities}}`,
 * then `{"execute": "qmp_capabilities"}` leaves negotiation mode; afterwards every
 * `{"execute", "arguments", "id"}` gets exactly one `{"return", "id"}` or `{"error": {class, desc}, "id"}`,
 * and asynchronous `{"event", "data", "timestamp"}` messages arrive in between (kept in `events`).
 * Source: QEMU docs/interop/qmp-spec.rst; observed with QEMU 7.2 (../shared/reference/proxmox-and-qemu.md §4).
 *
 * Jobs (`snapshot-save`, `snapshot-load`, `snapshot-delete`) are run by runJob: start with a unique
 * `job-id`, poll `query-jobs` with an adaptive backoff (woken early by JOB_STATUS_CHANGE events)
 * until the job is `concluded`, read its `error`, then `job-dismiss` it.
 */
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { fileKindAt } from '../../core/fsutil';

/** Default time to connect, get the greeting and negotiate (ms). */
export const QMP_CONNECT_TIMEOUT_MS = 5_000;
/** Default time for one command's answer (ms); a snapshot-save answers only after the save (the monitor is busy meanwhile). */
export const QMP_COMMAND_TIMEOUT_MS = 120_000;
/** Default time for a whole snapshot job (ms). */
export const QMP_JOB_TIMEOUT_MS = 30 * 60_000;
/** Polling of query-jobs: first wait, growth factor, cap (ms). */
export const JOB_POLL = { firstMs: 5, factor: 2, maxMs: 100 } as const;

/** How to start QEMU so AgentKeep can reach it (used in hints). */
export function startHint(socketPath: string): string {
  return `Start QEMU with -qmp unix:${socketPath},server=on,wait=off and qcow2 disks (see docs/qemu.md), or fix the target (qemu:/abs/path/to/qmp.sock).`;
}

/** One QMP event as QEMU sent it, plus the local receive time. */
export interface QmpEvent {
  event: string;
  data?: Record<string, unknown>;
  /** QEMU's timestamp {seconds, microseconds}. */
  timestamp?: { seconds: number; microseconds: number };
  /** Date.now() when it arrived. */
  receivedAt: number;
}

/** A QMP `error` answer: `class` (GenericError, CommandNotFound, DeviceNotFound, ...) and `desc`. */
export class QmpCommandError extends Error {
  constructor(
    readonly command: string,
    readonly errorClass: string,
    readonly desc: string,
  ) {
    super(`QMP ${command} failed: ${desc} (${errorClass})`);
    this.name = 'QmpCommandError';
  }
}

/** An entry of `query-jobs` (QAPI JobInfo). */
export interface QmpJobInfo {
  id: string;
  type: string;
  status: string;
  'current-progress': number;
  'total-progress': number;
  error?: string;
}

interface Pending {
  command: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** One negotiated QMP connection. Create with QmpClient.connect; close() when done. */
export class QmpClient {
  /** Events received so far (the newest 1000). */
  readonly events: QmpEvent[] = [];
  /** The greeting's `QMP.version.qemu` ({major, minor, micro}) and `package`. */
  version?: { qemu: { major: number; minor: number; micro: number }; package?: string };
  private buf = '';
  private nextId = 1;
  private readonly pending = new Map<string, Pending>();
  private closedError?: Error;
  private readonly eventWaiters = new Set<(e: QmpEvent) => void>();
  private greeting?: { resolve: () => void; reject: (e: Error) => void };
  /** The socket connected (errors before that are connect errors: missing, refused, ...). */
  private connected = false;

  private constructor(
    private readonly sock: net.Socket,
    readonly socketPath: string,
  ) {
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => this.onData(d));
    sock.on('close', () =>
      this.fail(
        new AgentKeepError(
          'Hypervisor',
          `QEMU closed the QMP connection on ${socketPath} (did the VM quit?).`,
          startHint(socketPath),
        ),
      ),
    );
    sock.once('connect', () => (this.connected = true));
    sock.on('error', (e: NodeJS.ErrnoException) =>
      this.fail(
        this.connected
          ? new AgentKeepError(
              'Hypervisor',
              `QMP connection to ${socketPath} failed: ${e.message}.`,
              startHint(socketPath),
            )
          : connectError(socketPath, e),
      ),
    );
  }

  /**
   * Connect to a QMP unix socket, read the greeting and send `qmp_capabilities`.
   * @throws AgentKeepError TargetNotFound when the socket file is missing, refuses connections (QEMU
   *   not running), is not a socket, or does not greet in time (another client holds the monitor:
   *   a `-qmp` socket serves one client at a time); the hint says how to start QEMU.
   */
  static async connect(socketPath: string, opts: { timeoutMs?: number } = {}): Promise<QmpClient> {
    const timeoutMs = opts.timeoutMs ?? QMP_CONNECT_TIMEOUT_MS;
    const c = new QmpClient(net.createConnection({ path: socketPath }), socketPath);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            c.connected
              ? new AgentKeepError(
                  'TargetNotFound',
                  `QEMU did not greet on ${socketPath} within ${timeoutMs} ms: another QMP client is probably connected (a -qmp socket serves one client at a time).`,
                  `Disconnect the other client, or give QEMU a second QMP socket for AgentKeep (-qmp unix:${path.join(path.dirname(socketPath), 'agentkeep-qmp.sock')},server=on,wait=off) and use that as the target.`,
                )
              : new AgentKeepError(
                  'TargetNotFound',
                  `Connecting to the QMP socket ${socketPath} timed out after ${timeoutMs} ms.`,
                  startHint(socketPath),
                ),
          );
        }, timeoutMs);
        c.greeting = {
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        };
      });
      await c.execute('qmp_capabilities', undefined, { timeoutMs });
    } catch (e) {
      c.close();
      throw e;
    }
    return c;
  }

  private onData(d: string): void {
    this.buf += d;
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, nl).trim();
      this.buf = this.buf.slice(nl + 1);
      if (line) this.onMessage(line);
    }
  }

  private onMessage(line: string): void {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.fail(
        new AgentKeepError(
          'Hypervisor',
          `${this.socketPath} sent something that is not QMP: ${line.slice(0, 200)}`,
          'Point the target at a QMP socket (-qmp), not a human monitor (-monitor) or serial socket.',
        ),
      );
      this.sock.destroy();
      return;
    }
    if (m.QMP && typeof m.QMP === 'object') {
      this.version = (m.QMP as { version?: QmpClient['version'] }).version;
      this.greeting?.resolve();
      this.greeting = undefined;
      return;
    }
    if (typeof m.event === 'string') {
      const ev: QmpEvent = {
        event: m.event,
        data: m.data as QmpEvent['data'],
        timestamp: m.timestamp as QmpEvent['timestamp'],
        receivedAt: Date.now(),
      };
      this.events.push(ev);
      if (this.events.length > 1000) this.events.splice(0, this.events.length - 1000);
      for (const w of [...this.eventWaiters]) w(ev);
      return;
    }
    const id = typeof m.id === 'string' ? m.id : undefined;
    const p = id ? this.pending.get(id) : undefined;
    if (!p || !id) return; // an answer nobody waits for (e.g. after a timeout)
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (m.error && typeof m.error === 'object') {
      const err = m.error as { class?: string; desc?: string };
      p.reject(new QmpCommandError(p.command, err.class ?? 'GenericError', err.desc ?? 'unknown error'));
    } else {
      p.resolve(m.return);
    }
  }

  private fail(e: Error): void {
    if (this.closedError) return;
    this.closedError = e;
    this.greeting?.reject(e);
    this.greeting = undefined;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(e);
    }
  }

  /**
   * Run one QMP command and return its `return` value.
   * @throws QmpCommandError for an `error` answer; AgentKeepError Hypervisor when the connection
   *   closes or the answer does not come within `timeoutMs` (default QMP_COMMAND_TIMEOUT_MS).
   */
  execute<T = unknown>(command: string, args?: Record<string, unknown>, opts: { timeoutMs?: number } = {}): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = `ak-${this.nextId++}`;
    const timeoutMs = opts.timeoutMs ?? QMP_COMMAND_TIMEOUT_MS;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new AgentKeepError(
            'Hypervisor',
            `QEMU did not answer ${command} within ${Math.round(timeoutMs / 1000)} s on ${this.socketPath}.`,
            'Check that the VM is not hung (query-status); a large snapshot may need more time.',
          ),
        );
      }, timeoutMs);
      this.pending.set(id, { command, resolve: resolve as (v: unknown) => void, reject, timer });
      this.sock.write(JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}), id }) + '\n');
    });
  }

  /** Resolve with the next event accepted by `match`, or undefined after `ms` milliseconds. */
  nextEvent(match: (e: QmpEvent) => boolean, ms: number): Promise<QmpEvent | undefined> {
    return new Promise((resolve) => {
      const w = (e: QmpEvent): void => {
        if (!match(e)) return;
        done(e);
      };
      const timer = setTimeout(() => done(undefined), ms);
      const done = (e: QmpEvent | undefined): void => {
        clearTimeout(timer);
        this.eventWaiters.delete(w);
        resolve(e);
      };
      this.eventWaiters.add(w);
    });
  }

  /**
   * Run a snapshot job to its end: `command` with `{job-id, ...args}`, then poll `query-jobs` (first
   * after JOB_POLL.firstMs, doubling to JOB_POLL.maxMs, early when a JOB_STATUS_CHANGE for the job
   * arrives) until its status is `concluded`, then `job-dismiss`. A job that ends as `null`
   * (auto-dismissed) or vanishes counts as done without error.
   * @returns the job's `error` text (undefined = success) and its wall-clock duration in ms.
   * @throws QmpCommandError when QEMU refuses to start the job; AgentKeepError Hypervisor when the
   *   job outlives `timeoutMs` (default QMP_JOB_TIMEOUT_MS; it is left running) or the connection drops.
   */
  async runJob(
    command: string,
    args: Record<string, unknown>,
    opts: { timeoutMs?: number; jobPrefix?: string } = {},
  ): Promise<{ error?: string; ms: number; jobId: string }> {
    const started = Date.now();
    const jobId = `${opts.jobPrefix ?? 'ak'}-${command}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    const timeoutMs = opts.timeoutMs ?? QMP_JOB_TIMEOUT_MS;
    const isOurs = (e: QmpEvent): boolean => e.event === 'JOB_STATUS_CHANGE' && e.data?.id === jobId;
    let concludedSeen = false;
    const seen = (e: QmpEvent): void => {
      if (isOurs(e) && (e.data?.status === 'concluded' || e.data?.status === 'null')) concludedSeen = true;
    };
    this.eventWaiters.add(seen);
    try {
      await this.execute(command, { 'job-id': jobId, ...args }, { timeoutMs });
      let wait: number = JOB_POLL.firstMs;
      for (;;) {
        const jobs = await this.execute<QmpJobInfo[]>('query-jobs');
        const job = jobs.find((j) => j.id === jobId);
        if (!job) return { ms: Date.now() - started, jobId };
        if (job.status === 'concluded') {
          await this.execute('job-dismiss', { id: jobId }).catch(() => undefined);
          return { ...(job.error ? { error: job.error } : {}), ms: Date.now() - started, jobId };
        }
        if (Date.now() - started > timeoutMs) {
          throw new AgentKeepError(
            'Hypervisor',
            `QEMU job ${jobId} (${command}) is still ${job.status} after ${Math.round(timeoutMs / 1000)} s; it was left running.`,
            'Watch it with query-jobs; dismiss it with job-dismiss when it has concluded.',
          );
        }
        if (!concludedSeen)
          await this.nextEvent((e) => isOurs(e) && (e.data?.status === 'concluded' || e.data?.status === 'null'), wait);
        wait = Math.min(wait * JOB_POLL.factor, JOB_POLL.maxMs);
      }
    } finally {
      this.eventWaiters.delete(seen);
    }
  }

  /** Close the connection (pending commands fail). */
  close(): void {
    this.fail(new AgentKeepError('Hypervisor', `The QMP connection to ${this.socketPath} was closed.`));
    this.sock.destroy();
  }
}

/** The clear error for a failed connect to a QMP socket. */
function connectError(socketPath: string, e: NodeJS.ErrnoException): AgentKeepError {
  const hint = startHint(socketPath);
  switch (e.code) {
    case 'ENOENT':
      return new AgentKeepError(
        'TargetNotFound',
        `No QMP socket at ${socketPath} (the file does not exist: QEMU is not running with this -qmp socket).`,
        hint,
      );
    case 'ECONNREFUSED': {
      // Linux answers ECONNREFUSED for a regular file too: never call a disk image a "left-over socket".
      const kind = fileKindAt(socketPath);
      if (kind !== 'socket') {
        return new AgentKeepError(
          'BadTarget',
          `${socketPath} is not a socket but a ${kind}: a qemu: target names QEMU's QMP socket, not the disk image or a folder.`,
          "Give the socket of QEMU's -qmp unix:PATH,server=on,wait=off, e.g. qemu:/run/agent-vm/qmp.sock (see docs/qemu.md).",
        );
      }
      return new AgentKeepError(
        'TargetNotFound',
        `The QMP socket ${socketPath} refuses connections (QEMU is not running; the socket file is left over).`,
        hint,
      );
    }
    case 'ENOTSOCK':
      return new AgentKeepError('TargetNotFound', `${socketPath} is not a socket.`, hint);
    case 'EACCES':
    case 'EPERM':
      return new AgentKeepError(
        'TargetNotFound',
        `No permission to connect to the QMP socket ${socketPath}.`,
        'Run AgentKeep as the user that started QEMU, or make the socket accessible (its directory and the socket need rw).',
      );
    default:
      return new AgentKeepError(
        'TargetNotFound',
        `Cannot connect to the QMP socket ${socketPath}: ${e.message}.`,
        hint,
      );
  }
}
