/**
 * The Proxmox VE client AgentKeep uses: proxmox-api's typed path proxy over our PveTransport, plus
 * what every caller needs on top: credentials from the environment, the owning node of a guest,
 * waiting for tasks (UPIDs) with adaptive backoff, and reconciling after an ambiguous failure.
 */
import type { ApiRequestable, Proxmox } from 'proxmox-api' with { 'resolution-mode': 'import' };
import { readFileSync } from 'node:fs';
import { AgentKeepError } from '../../core/errors';
import { abortedError } from '../../core/fsutil';
import { lockedError } from './describe';
import { PveError, PveTransport, type PveAuth, type PveConnectionOptions } from './transport';

/** One item of GET /nodes/{node}/{type}/{vmid}/snapshot (booleans arrive as 0/1). */
export interface PveSnapshotItem {
  name: string;
  description?: string;
  snaptime?: number;
  vmstate?: number | boolean;
  parent?: string;
  snapstate?: string;
  /** Only on the `current` pseudo-entry. */
  running?: number | boolean;
}

/** One item of GET /nodes/{node}/tasks. */
export interface PveTaskItem {
  upid: string;
  type: string;
  id?: string;
  user?: string;
  starttime: number;
  endtime?: number;
  /** Finished tasks: the exit status ("OK", "WARNINGS: n", or the error); absent or "running" while running. */
  status?: string;
}

/** The end of a task. */
export interface TaskResult {
  upid: string;
  exitstatus: string;
  /** Lines of a "WARNINGS: n" task log that are warnings (without the "WARN: " prefix). */
  warnings: string[];
}

/** The subset of the proxmox-api path proxy for one guest (qemu and lxc share it). */
export interface GuestApi {
  snapshot: {
    $get(): Promise<PveSnapshotItem[]>;
    $post(p: { snapname: string; description?: string; vmstate?: boolean }): Promise<string>;
    $(name: string): {
      $delete(p?: { force?: boolean }): Promise<string>;
      config: { $get(): Promise<Record<string, unknown>>; $put(p: { description?: string }): Promise<null> };
      rollback: { $post(p?: { start?: boolean }): Promise<string> };
    };
  };
  config: { $get(): Promise<Record<string, unknown>> };
  feature: {
    $get(p: { feature: 'snapshot' | 'clone' | 'copy'; snapname?: string }): Promise<{ hasFeature: number | boolean }>;
  };
  status: { current: { $get(): Promise<{ status: string; qmpstatus?: string; lock?: string; name?: string }> } };
}

/** Knobs (tests and the benchmark shorten them). */
export interface PveClientOptions {
  /** Shortest poll delay in ms (default 50). The delay is 15% of the time spent waiting so far, within [pollMinMs, pollMaxMs]. */
  pollMinMs?: number;
  /** Longest poll delay in ms (default 1000). */
  pollMaxMs?: number;
  /** Give up waiting for a task after this many ms (default 30 min; the task keeps running on the host). */
  taskTimeoutMs?: number;
  /** How long to look for the task of an ambiguous request before concluding it never started (default 3000 ms). */
  reconcileMs?: number;
  /** Stops waiting (the task keeps running). */
  signal?: AbortSignal;
}

// proxmox-api ships CommonJS under `require` but its typings only as ESM, so the value comes through
// require() and the types through an import-mode type import. Loaded on first use: it pulls in its
// own undici, which compiles llhttp's WASM, so every other command (and the apt hook) would pay for it.
function proxmoxApi(engine: ApiRequestable): Proxmox.Api {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const lib = require('proxmox-api') as { proxmoxApi: (engine: ApiRequestable) => Proxmox.Api };
  return lib.proxmoxApi(engine);
}

const TOKEN_HINT =
  'Set AGENTKEEP_PVE_TOKEN=USER@REALM!TOKENID=SECRET (an API token from Datacenter > Permissions > API Tokens), or AGENTKEEP_PVE_USER + AGENTKEEP_PVE_PASSWORD.';

/**
 * Credentials from the environment: AGENTKEEP_PVE_TOKEN (`USER@REALM!TOKENID=SECRET`), else
 * AGENTKEEP_PVE_USER + AGENTKEEP_PVE_PASSWORD (ticket login).
 * @throws AgentKeepError AuthFailed when none or a malformed token is set (the secret is never shown).
 */
export function authFromEnv(env: NodeJS.ProcessEnv = process.env): PveAuth {
  const tok = env.AGENTKEEP_PVE_TOKEN?.trim();
  if (tok) {
    const m = /^([^\s@!=]+@[^\s@!=]+![A-Za-z][A-Za-z0-9._-]*)=(\S+)$/.exec(tok);
    if (!m) {
      throw new AgentKeepError(
        'AuthFailed',
        'AGENTKEEP_PVE_TOKEN is not of the form USER@REALM!TOKENID=SECRET.',
        'Example: agentkeep@pve!ak=01234567-89ab-cdef-0123-456789abcdef (the token id, "=", the secret shown once when the token was made).',
      );
    }
    return { kind: 'token', tokenId: m[1], secret: m[2] };
  }
  const user = env.AGENTKEEP_PVE_USER?.trim();
  const password = env.AGENTKEEP_PVE_PASSWORD;
  if (user && password) return { kind: 'ticket', username: user.includes('@') ? user : `${user}@pam`, password };
  throw new AgentKeepError('AuthFailed', 'No Proxmox credentials are set.', TOKEN_HINT);
}

/**
 * Connection options for HOST:PORT from the environment: credentials (authFromEnv),
 * AGENTKEEP_PVE_FINGERPRINT (pinned SHA-256), AGENTKEEP_PVE_CA (CA file).
 * @throws AgentKeepError AuthFailed (credentials), FileError (CA file unreadable)
 */
export function connectionFromEnv(
  host: string,
  port: number,
  env: NodeJS.ProcessEnv = process.env,
  log?: (l: string) => void,
): PveConnectionOptions {
  const caFile = env.AGENTKEEP_PVE_CA?.trim();
  let ca: Buffer | undefined;
  if (caFile) {
    try {
      ca = readFileSync(caFile);
    } catch (e) {
      throw new AgentKeepError(
        'FileError',
        `Cannot read the Proxmox CA file ${caFile} (AGENTKEEP_PVE_CA): ${(e as Error).message}.`,
        'Copy /etc/pve/pve-root-ca.pem from the node and point AGENTKEEP_PVE_CA at it.',
      );
    }
  }
  return {
    host,
    port,
    auth: authFromEnv(env),
    fingerprint: env.AGENTKEEP_PVE_FINGERPRINT?.trim() || undefined,
    ca,
    log,
  };
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** Whether a task exit status is a success (pve-common `status_is_error`: only OK and WARNINGS are not errors). */
export function taskSucceeded(exitstatus: string): boolean {
  return exitstatus === 'OK' || /^WARNINGS: \d+$/.test(exitstatus);
}

/** A Proxmox VE endpoint with one set of credentials. */
export class PveClient {
  readonly transport: PveTransport;
  /** proxmox-api's typed proxy over our transport. */
  readonly api: Proxmox.Api;
  private readonly nodes = new Map<string, string>();

  constructor(
    conn: PveConnectionOptions,
    readonly opts: PveClientOptions = {},
  ) {
    this.transport = new PveTransport(conn);
    this.api = proxmoxApi(this.transport);
  }

  /** Close kept-alive connections. */
  close(): void {
    this.transport.close();
  }

  /** The path proxy of one guest. */
  guest(node: string, type: 'qemu' | 'lxc', vmid: number): GuestApi {
    const n = this.api.nodes.$(node);
    return (type === 'qemu' ? n.qemu.$(vmid) : n.lxc.$(vmid)) as unknown as GuestApi;
  }

  /** GET /cluster/resources?type=vm (every guest the credentials may see). */
  async resources(): Promise<
    Array<{
      id: string;
      type: string;
      vmid: number;
      node: string;
      status: string;
      name?: string;
      lock?: string;
      tags?: string;
      template?: number | boolean;
    }>
  > {
    return (await this.api.cluster.resources.$get({ type: 'vm' })) as never;
  }

  /**
   * The node that owns a guest: `node` itself, or for `-` the one /cluster/resources names (cached).
   * @throws AgentKeepError TargetNotFound when no guest of that type and id is visible.
   */
  async ownerNode(node: string, type: 'qemu' | 'lxc', vmid: number): Promise<string> {
    if (node !== '-') return node;
    const key = `${type}/${vmid}`;
    const cached = this.nodes.get(key);
    if (cached) return cached;
    const r = (await this.resources()).find((x) => x.type === type && Number(x.vmid) === vmid);
    if (!r) {
      throw new AgentKeepError(
        'TargetNotFound',
        `No ${type === 'qemu' ? 'VM' : 'container'} ${vmid} in the cluster (GET /cluster/resources?type=vm).`,
        'Check the VMID and type (qemu or lxc), and that the token has VM.Audit on /vms/VMID (else the guest is hidden).',
      );
    }
    this.nodes.set(key, r.node);
    return r.node;
  }

  /**
   * Poll GET /nodes/{node}/tasks/{upid}/status until `stopped`, with adaptive backoff: the delay is
   * 15% of the time waited so far, at least pollMinMs (50) and at most pollMaxMs (1000), so a short
   * task is seen within tens of ms and a long one costs about one request a second (Proxmox has no
   * push or long poll for tasks). Success = `OK` or `WARNINGS: n` (warnings read from the task log).
   * @param what what the task does, for messages ("snapshot ak_...")
   * @throws AgentKeepError GuestLocked / Hypervisor with the log tail when the task failed; Hypervisor
   *   when it is still running after taskTimeoutMs; the aborted error when opts.signal fires (the task continues).
   */
  async waitTask(node: string, upid: string, what: string): Promise<TaskResult> {
    const min = this.opts.pollMinMs ?? 50;
    const max = this.opts.pollMaxMs ?? 1000;
    const deadline = Date.now() + (this.opts.taskTimeoutMs ?? 30 * 60_000);
    const signal = this.opts.signal;
    const started = Date.now();
    for (;;) {
      const st = (await this.api.nodes.$(node).tasks.$(upid).status.$get()) as { status: string; exitstatus?: string };
      if (st.status === 'stopped') {
        const exitstatus = st.exitstatus ?? 'unexpected status';
        if (taskSucceeded(exitstatus)) {
          const warnings =
            exitstatus === 'OK'
              ? []
              : (await this.taskLog(node, upid))
                  .filter((l) => /^WARN(ING)?:/.test(l))
                  .map((l) => l.replace(/^WARN(ING)?:\s*/, ''));
          if (exitstatus !== 'OK' && !warnings.length)
            warnings.push(`Proxmox reported ${exitstatus} (see the task log of ${upid}).`);
          return { upid, exitstatus, warnings };
        }
        throw await this.taskError(node, upid, exitstatus, what);
      }
      if (signal?.aborted)
        throw abortedError(
          `stopped waiting for ${what}; the Proxmox task ${upid} continues on the host (see node > Task History)`,
        );
      if (Date.now() > deadline) {
        throw new AgentKeepError(
          'Hypervisor',
          `${what}: the Proxmox task ${upid} is still running after ${Math.round((this.opts.taskTimeoutMs ?? 1_800_000) / 1000)} s; AgentKeep stopped waiting, the task continues on the host.`,
          'Watch it in node > Task History; list restore points again when it has ended.',
        );
      }
      await sleep(Math.min(max, Math.max(min, Math.round((Date.now() - started) * 0.15))), signal);
    }
  }

  /** The text lines of a task log (GET .../tasks/{upid}/log, up to 1000 lines). */
  async taskLog(node: string, upid: string): Promise<string[]> {
    const lines = (await this.api.nodes.$(node).tasks.$(upid).log.$get({ start: 0, limit: 1000 })) as Array<{
      n: number;
      t: string;
    }>;
    return (lines ?? []).sort((a, b) => a.n - b.n).map((l) => l.t);
  }

  private async taskError(node: string, upid: string, exitstatus: string, what: string): Promise<AgentKeepError> {
    const tail = await this.taskLog(node, upid).then(
      (l) => l.filter((x) => x.trim()).slice(-8),
      () => [] as string[],
    );
    const lock = /is locked \(([\w-]+)\)/.exec(exitstatus);
    const up = /^UPID:[^:]+:[^:]+:[^:]+:[^:]+:(\w+):(\d+):/.exec(upid);
    if (lock && up) {
      const type = up[1].startsWith('vz') ? 'lxc' : 'qemu';
      return lockedError(lock[1], type, Number(up[2]), what);
    }
    if (/snapshot feature is not available/.test(exitstatus)) {
      return new AgentKeepError(
        'Unsupported',
        `${what} failed: ${exitstatus}.`,
        'A disk of the guest is on storage without snapshots (raw on dir/NFS/CIFS, LVM thick, iSCSI, pass-through). Move it to ZFS, LVM-thin, Ceph/RBD, BTRFS or qcow2 (see docs/proxmox.md).',
      );
    }
    return new AgentKeepError(
      'Hypervisor',
      `${what} failed on Proxmox: ${exitstatus}.${tail.length ? `\nTask log (last lines):\n  ${tail.join('\n  ')}` : ''}`,
      `Task ${upid}; see node > Task History for the full log.`,
    );
  }

  /** GET /nodes/{node}/tasks?vmid=…&source=all (newest first, as Proxmox sorts them). */
  async tasks(node: string, vmid: number): Promise<PveTaskItem[]> {
    return (await this.api.nodes.$(node).tasks.$get({ vmid, source: 'all', limit: 50 })) as PveTaskItem[];
  }

  /**
   * After an ambiguous mutating request (connection dropped after sending, timeout, 59x): find out
   * what happened, never resend. Looks for a task of `types` on the guest started at or after
   * `since` (epoch s): running -> wait for it; stopped -> its result. Without a task, `done()` decides
   * (e.g. "the snapshot exists"); the search repeats for reconcileMs, since the worker may appear late.
   * @returns the task result, or `{upid: '', exitstatus: 'OK'}` when `done()` saw the effect without a task.
   * @throws AgentKeepError Hypervisor "not done" when neither a task nor the effect shows up (nothing happened: safe to retry),
   *   or the task's error.
   */
  async reconcile(
    node: string,
    vmid: number,
    types: string[],
    since: number,
    what: string,
    done: () => Promise<boolean>,
    cause: PveError,
  ): Promise<TaskResult> {
    const until = Date.now() + (this.opts.reconcileMs ?? 3000);
    for (;;) {
      const list = await this.tasks(node, vmid).catch(() => [] as PveTaskItem[]);
      const t = list
        .filter((x) => types.includes(x.type) && String(x.id) === String(vmid) && x.starttime >= since - 2)
        .sort((a, b) => b.starttime - a.starttime)[0];
      if (t) return this.waitTask(node, t.upid, what);
      if (await done().catch(() => false)) return { upid: '', exitstatus: 'OK', warnings: [] };
      if (Date.now() > until) {
        throw new AgentKeepError(
          'Hypervisor',
          `${what}: ${cause.message} No task for it appeared on ${node} and nothing changed, so Proxmox did not act on it.`,
          'Nothing was changed; it is safe to try again.',
        );
      }
      await sleep(200, this.opts.signal);
    }
  }
}
