/**
 * The `proxmox` backend: restore points are Proxmox VE snapshots of a VM (qemu) or container (lxc),
 * taken through the real API (docs/proxmox.md). Target: `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID`.
 *
 * Public module API (used by the core, the CLI and the extension):
 * - `proxmoxBackend` (BackendFactory, scheme `proxmox`) and `ProxmoxBackend` (MachineBackend):
 *   create = POST .../snapshot (snapname = the restore-point id, description = label + reason +
 *   `agentkeep:v1:` marker, optional vmstate for qemu), after GET .../config (`lock`) and
 *   GET .../feature?feature=snapshot; restore = POST .../snapshot/{snapname}/rollback (`start`);
 *   delete = DELETE .../snapshot/{snapname} (never `force` unless `deleteSnapshot(..., {force: true})`);
 *   list = ids of the AgentKeep snapshots; foreign() = restore points rebuilt from the markers.
 *   Extra: `tree()` (the snapshot tree with `current`), `editDescription()`, `deleteSnapshot()`.
 *   Every mutating call waits for its task (UPID) and is never resent (client.ts reconcile()).
 * - `discoverAgents(hostTarget, tag, env)`: guests with a tag from GET /cluster/resources?type=vm.
 * - `guestFileRead()` / `guestFileWrite()`: QEMU guest agent file access (agent/file-read, 16 MiB;
 *   agent/file-write, 61440 bytes), for memory stores inside a VM.
 * - `connectionFromEnv()` / `authFromEnv()` (client.ts): credentials from AGENTKEEP_PVE_TOKEN or
 *   AGENTKEEP_PVE_USER + AGENTKEEP_PVE_PASSWORD, AGENTKEEP_PVE_FINGERPRINT, AGENTKEEP_PVE_CA.
 * - `PveTransport` (transport.ts): the HTTPS transport with fingerprint/CA pinning and no retries of mutations.
 * Snapshots not made by AgentKeep (no marker) are listed in tree() but never rolled back or deleted.
 */
import { listAction } from '../../core/actions';
import { AgentKeepError } from '../../core/errors';
import type { ParsedTarget } from '../../core/target';
import type { RestorePoint } from '../../protocol';
import type {
  BackendContext,
  BackendFactory,
  MachineBackend,
  RestoreOutcome,
  SnapshotInfo,
  SnapshotMeta,
} from '../types';
import type { DiscoveredAgent } from '../types';
import { PveClient, connectionFromEnv, type PveClientOptions, type PveSnapshotItem, type TaskResult } from './client';
import { checkSnapname, describeSnapshot, lockedError, parseMarker, relabel, type SnapshotMarker } from './describe';
import { PveError } from './transport';
import { GUEST_WRITE_MAX, isProxmoxTarget, PROXMOX_FAMILY } from './target';
import type { ProxmoxTarget } from './target';

export { GUEST_WRITE_MAX, isProxmoxTarget, parseProxmoxTarget, type ProxmoxTarget } from './target';
export {
  PveClient,
  authFromEnv,
  connectionFromEnv,
  taskSucceeded,
  type PveClientOptions,
  type PveSnapshotItem,
} from './client';
export { describeSnapshot, parseMarker, checkSnapname, lockedError, type SnapshotMarker } from './describe';
export { PveError, PveTransport, normalizeFingerprint, type PveAuth, type PveConnectionOptions } from './transport';

/** One node of the snapshot tree (GET .../snapshot, sorted by snaptime, linked by parent). */
export interface SnapshotTreeEntry {
  name: string;
  description: string;
  /** Epoch seconds (absent on `current`). */
  snaptime?: number;
  vmstate: boolean;
  parent?: string;
  /** prepare | delete while a task works on it (or after one failed half-way). */
  snapstate?: string;
  /** The `current` pseudo-entry: "you are here". */
  current: boolean;
  /** Only on current: whether the guest runs. */
  running?: boolean;
  /** The AgentKeep marker; absent = not ours (never touched). */
  marker?: SnapshotMarker;
}

const bool = (v: unknown): boolean => v === true || v === 1 || v === '1';

/** The Proxmox backend for one guest. */
export class ProxmoxBackend implements MachineBackend {
  readonly name = 'proxmox';
  readonly capabilities;
  private clientP?: PveClient;
  /** Where the guest is (the target's parsed options). */
  readonly pt: ProxmoxTarget;

  /**
   * @param target a parsed proxmox:// target
   * @param opts client knobs (poll delays, timeouts, abort signal)
   * @param env where credentials come from (default process.env)
   * @param log receives one redacted line per request
   */
  constructor(
    readonly target: ParsedTarget,
    private readonly opts: PveClientOptions = {},
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly log?: (line: string) => void,
  ) {
    if (!isProxmoxTarget(target)) {
      const hint = 'Write proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID.';
      throw new AgentKeepError('BadTarget', `${target.spec} is not a proxmox:// target.`, hint);
    }
    this.pt = target.options;
    this.capabilities = {
      ramState: this.pt.type === 'qemu',
      speedClass: 'fast',
      canRunWhileRunning: true,
      diff: false,
    } as const;
  }

  /** The client (credentials are read on first use, so listing the journal works without them). */
  get client(): PveClient {
    this.clientP ??= new PveClient(connectionFromEnv(this.pt.host, this.pt.port, this.env, this.log), this.opts);
    return this.clientP;
  }

  /** Close kept-alive connections. */
  close(): void {
    this.clientP?.close();
  }

  private get T(): string {
    return this.pt.type === 'qemu' ? 'VM' : 'CT';
  }

  private async guest(): Promise<{ node: string; g: ReturnType<PveClient['guest']> }> {
    const node = await this.client.ownerNode(this.pt.node, this.pt.type, this.pt.vmid);
    return { node, g: this.client.guest(node, this.pt.type, this.pt.vmid) };
  }

  /**
   * Reachable, authenticated, and the guest exists: GET .../status/current on the owning node.
   * @throws AgentKeepError TargetNotFound, AuthFailed (credentials, TLS), Hypervisor (unreachable)
   */
  async check(): Promise<void> {
    try {
      const { g } = await this.guest();
      await g.status.current.$get();
    } catch (e) {
      throw this.notFound(e);
    }
  }

  private notFound(e: unknown): unknown {
    if (
      e instanceof PveError &&
      (e.kind === 'TargetNotFound' || e.status === 500) &&
      /does not exist|not exist|no such/i.test(e.reason)
    ) {
      return new AgentKeepError(
        'TargetNotFound',
        `${this.T} ${this.pt.vmid} does not exist on node ${this.pt.node} of ${this.pt.host} (${e.reason}).`,
        `Check the target ${this.target.spec}: node, type (qemu = VM, lxc = container) and VMID; with node "-" AgentKeep looks it up.`,
      );
    }
    return e;
  }

  /** The snapshot tree: every snapshot (ours marked) plus `current`, sorted by snaptime (current last). */
  async tree(): Promise<SnapshotTreeEntry[]> {
    const { g } = await this.guest();
    const items = await g.snapshot.$get();
    return items
      .map((s: PveSnapshotItem): SnapshotTreeEntry => {
        const marker = s.name === 'current' ? undefined : parseMarker(s.description);
        return {
          name: s.name,
          description: s.description ?? '',
          ...(s.snaptime !== undefined ? { snaptime: Number(s.snaptime) } : {}),
          vmstate: bool(s.vmstate),
          ...(s.parent ? { parent: s.parent } : {}),
          ...(s.snapstate ? { snapstate: s.snapstate } : {}),
          current: s.name === 'current',
          ...(s.name === 'current' ? { running: bool(s.running) } : {}),
          ...(marker ? { marker } : {}),
        };
      })
      .sort((a, b) =>
        a.current ? 1 : b.current ? -1 : (a.snaptime ?? 0) - (b.snaptime ?? 0) || a.name.localeCompare(b.name),
      );
  }

  /** The AgentKeep snapshot of restore point `id` (by marker, else by name), or undefined. */
  private async ours(id: string): Promise<SnapshotTreeEntry | undefined> {
    const t = await this.tree();
    return t.find((s) => s.marker?.id === id) ?? t.find((s) => s.name === id && s.marker);
  }

  private async assertUnlocked(g: ReturnType<PveClient['guest']>, what: string): Promise<void> {
    const cfg = await g.config.$get();
    if (typeof cfg.lock === 'string' && cfg.lock) throw lockedError(cfg.lock, this.pt.type, this.pt.vmid, what);
  }

  /**
   * Take a snapshot named `snapshotId` (checked against pve-configid, 40 chars, reserved names).
   * Checks the lock and GET feature?feature=snapshot first; waits for the task.
   * @throws AgentKeepError GuestLocked, Unsupported (no snapshot feature, vmstate on lxc), Hypervisor (task failed, with log tail), AuthFailed
   */
  async create(
    snapshotId: string,
    opts: { meta?: SnapshotMeta; vmstate?: boolean; signal?: AbortSignal },
  ): Promise<SnapshotInfo> {
    checkSnapname(snapshotId);
    if (opts.vmstate && this.pt.type === 'lxc') {
      throw new AgentKeepError(
        'Unsupported',
        'Containers (lxc) have no RAM state to save.',
        'Leave out --vmstate for a container target.',
      );
    }
    if (opts.signal) this.opts.signal = opts.signal;
    const { node, g } = await this.guest();
    const what = `snapshot ${snapshotId} of ${this.T} ${this.pt.vmid}`;
    await this.assertUnlocked(g, `take ${what}`);
    const feat = await g.feature.$get({ feature: 'snapshot' });
    if (!bool(feat.hasFeature)) {
      throw new AgentKeepError(
        'Unsupported',
        `${this.T} ${this.pt.vmid} cannot be snapshotted: a disk is on storage without snapshot support (GET feature?feature=snapshot says no).`,
        'Move the disks to ZFS, LVM-thin, Ceph/RBD, BTRFS, or qcow2 on a directory storage; raw disks on dir/NFS/CIFS, LVM thick, iSCSI and pass-through disks cannot be snapshotted.',
      );
    }
    const meta: SnapshotMeta = opts.meta ?? { label: snapshotId, kind: 'manual', createdAt: new Date().toISOString() };
    const description = describeSnapshot(snapshotId, meta);
    const since = Math.floor(Date.now() / 1000);
    let res: TaskResult;
    try {
      const upid = await g.snapshot.$post({
        snapname: snapshotId,
        description,
        ...(opts.vmstate ? { vmstate: true } : {}),
      });
      res = await this.client.waitTask(node, upid, what);
    } catch (e) {
      if (!(e instanceof PveError && e.ambiguous)) throw e;
      const exists = async (): Promise<boolean> =>
        (await g.snapshot.$get()).some((s) => s.name === snapshotId && !s.snapstate);
      res = await this.client.reconcile(node, this.pt.vmid, ['qmsnapshot', 'vzsnapshot'], since, what, exists, e);
    }
    const mine = (await this.tree()).find((s) => s.name === snapshotId);
    if (!mine)
      throw new AgentKeepError(
        'Hypervisor',
        `${what}: the task ended ${res.exitstatus} but the snapshot is not listed.`,
        'Look at node > Task History and the Snapshots tab of the guest.',
      );
    return {
      files: 0,
      bytes: 0,
      newBytes: 0,
      snapname: snapshotId,
      ...(mine.vmstate ? { vmstate: true } : {}),
      ...(mine.parent ? { parent: mine.parent } : {}),
      ...(res.warnings.length ? { warnings: res.warnings } : {}),
    };
  }

  /** Ids of the restore points whose snapshots are on the guest (from the markers). */
  async list(): Promise<string[]> {
    return (await this.tree()).filter((s) => s.marker).map((s) => s.marker!.id);
  }

  /**
   * Restore points rebuilt from the markers of AgentKeep snapshots on the guest (for `restore-point
   * list` on a machine whose journal lacks them). They hold no agent-state capture.
   */
  async foreign(): Promise<RestorePoint[]> {
    return (await this.tree())
      .filter((s) => s.marker && !s.snapstate)
      .map((s) => {
        const m = s.marker!;
        return {
          id: m.id,
          target: this.target.spec,
          label: m.label,
          createdAt: m.createdAt,
          status: 'ready' as const,
          kind: m.kind,
          machine: {
            backend: 'proxmox',
            files: 0,
            bytes: 0,
            newBytes: 0,
            durationMs: 0,
            snapname: s.name,
            ...(s.vmstate ? { vmstate: true } : {}),
            ...(s.parent ? { parent: s.parent } : {}),
          },
          agent: [],
          ...(m.pairOf ? { pairOf: m.pairOf } : {}),
          ...(m.important ? { important: true } : {}),
        };
      });
  }

  /**
   * Roll the guest back to the snapshot of `snapshotId`. A running guest is hard-stopped by Proxmox;
   * without RAM state it stays stopped unless `start` (needs VM.PowerMgmt). Reports the state after.
   * @throws AgentKeepError RestorePointNotFound (no such AgentKeep snapshot), GuestLocked, AuthFailed (403), Hypervisor
   */
  async restore(snapshotId: string, opts: { start?: boolean; signal?: AbortSignal }): Promise<RestoreOutcome> {
    if (opts.signal) this.opts.signal = opts.signal;
    const { node, g } = await this.guest();
    const snap = await this.ours(snapshotId);
    if (!snap) throw this.missing(snapshotId);
    const what = `rollback of ${this.T} ${this.pt.vmid} to ${snap.name}`;
    if (snap.snapstate)
      throw new AgentKeepError(
        'Hypervisor',
        `Cannot roll back to ${snap.name}: the snapshot is incomplete (snapstate = ${snap.snapstate}).`,
        'It was not fully taken or a delete failed half-way; pick another restore point.',
      );
    await this.assertUnlocked(g, `roll back ${this.T} ${this.pt.vmid}`);
    const before = await g.status.current.$get();
    const wasRunning = before.status === 'running';
    const since = Math.floor(Date.now() / 1000);
    const start = !!opts.start && !snap.vmstate;
    let res: TaskResult;
    try {
      const upid = await g.snapshot.$(snap.name).rollback.$post(start ? { start: true } : {});
      res = await this.client.waitTask(node, upid, what);
    } catch (e) {
      if (e instanceof PveError && e.status === 403 && start) {
        throw new AgentKeepError(
          'AuthFailed',
          `Proxmox denied the rollback with start=1: ${e.reason}.`,
          'Starting the guest after a rollback needs VM.PowerMgmt on /vms/VMID; grant it, or restore without --start and start the guest in Proxmox.',
        );
      }
      if (!(e instanceof PveError && e.ambiguous)) throw e;
      res = await this.client.reconcile(
        node,
        this.pt.vmid,
        ['qmrollback', 'vzrollback'],
        since,
        what,
        async () => false,
        e,
      );
    }
    const after = await g.status.current.$get();
    const machineState = after.qmpstatus === 'paused' ? 'paused' : after.status;
    const warnings = [...res.warnings];
    if (wasRunning)
      warnings.push(`The ${this.T} was running and was hard-stopped by the rollback (unsaved work in it is lost).`);
    if (machineState !== 'running')
      warnings.push(
        `The ${this.T} is ${machineState} after the rollback (${snap.vmstate ? 'its RAM state did not resume' : 'the snapshot has no RAM state'}); start it in Proxmox, or restore with --start next time.`,
      );
    return { added: [], removed: [], changed: [], machineState, warnings };
  }

  private missing(id: string): AgentKeepError {
    return new AgentKeepError(
      'RestorePointNotFound',
      `${this.T} ${this.pt.vmid} has no AgentKeep snapshot for restore point ${id}.`,
      'It may have been deleted in Proxmox.',
      [listAction(this.target.spec)],
    );
  }

  /** Delete the snapshot of `snapshotId` (no force). A missing snapshot counts as deleted. */
  async delete(snapshotId: string): Promise<void> {
    await this.deleteSnapshot(snapshotId, {});
  }

  /**
   * DELETE .../snapshot/{snapname}; `force` (remove from the config even when a disk snapshot cannot
   * be removed) only when asked. Refuses snapshots AgentKeep did not make.
   * @throws AgentKeepError GuestLocked, Unsupported (not ours), Hypervisor
   */
  async deleteSnapshot(snapshotId: string, o: { force?: boolean; signal?: AbortSignal }): Promise<void> {
    if (o.signal) this.opts.signal = o.signal;
    const { node, g } = await this.guest();
    const all = await this.tree();
    const snap = all.find((s) => s.marker?.id === snapshotId) ?? all.find((s) => s.name === snapshotId);
    if (!snap) return;
    if (!snap.marker)
      throw new AgentKeepError(
        'Unsupported',
        `Snapshot ${snap.name} of ${this.T} ${this.pt.vmid} was not made by AgentKeep; AgentKeep leaves it alone.`,
        'Delete it in Proxmox if you mean to.',
      );
    const what = `delete of snapshot ${snap.name} of ${this.T} ${this.pt.vmid}`;
    if (!o.force) await this.assertUnlocked(g, `delete snapshot ${snap.name}`);
    const since = Math.floor(Date.now() / 1000);
    try {
      const upid = await g.snapshot.$(snap.name).$delete(o.force ? { force: true } : {});
      await this.client.waitTask(node, upid, what);
    } catch (e) {
      if (!(e instanceof PveError && e.ambiguous)) throw e;
      const gone = async (): Promise<boolean> => !(await g.snapshot.$get()).some((s) => s.name === snap.name);
      await this.client.reconcile(node, this.pt.vmid, ['qmdelsnapshot', 'vzdelsnapshot'], since, what, gone, e);
    }
  }

  /**
   * Replace the human part of an AgentKeep snapshot's description (PUT .../snapshot/{snapname}/config),
   * keeping the marker. Synchronous on Proxmox (fails on a locked guest).
   * @throws AgentKeepError RestorePointNotFound, GuestLocked
   */
  async editDescription(snapshotId: string, text: string | undefined, important?: boolean): Promise<void> {
    const { g } = await this.guest();
    const snap = await this.ours(snapshotId);
    if (!snap) throw this.missing(snapshotId);
    await g.snapshot.$(snap.name).config.$put({ description: relabel(snap.description, text, important) });
  }

  /** MachineBackend.relabel: the new label and important flag go into the snapshot description and its marker. */
  relabel(snapshotId: string, change: { label?: string; important?: boolean }): Promise<void> {
    return this.editDescription(snapshotId, change.label, change.important);
  }

  /** MachineBackend.readGuestFile: see guestFileRead. */
  readGuestFile(file: string): Promise<Buffer> {
    return guestFileRead(this, file);
  }

  /** MachineBackend.writeGuestFile: see guestFileWrite. */
  writeGuestFile(file: string, content: string): Promise<void> {
    return guestFileWrite(this, file, content);
  }
}

/** The `proxmox` backend family. */
export const proxmoxBackend: BackendFactory<ProxmoxTarget> = {
  ...PROXMOX_FAMILY,
  create(ctx: BackendContext): MachineBackend {
    const log =
      process.env.AGENTKEEP_PVE_DEBUG === '1'
        ? (l: string): void => void process.stderr.write(`[pve] ${l}\n`)
        : undefined;
    return new ProxmoxBackend(ctx.target, {}, process.env, log);
  },
  discover: { form: 'proxmox://HOST[:PORT]', run: (spec, tag) => discoverAgents(spec, tag) },
};

export type { DiscoveredAgent } from '../types';

/**
 * Parse `proxmox://HOST[:PORT]` (anything after the host is ignored) for discovery.
 * @throws AgentKeepError BadTarget
 */
export function parseHost(spec: string): { host: string; port: number } {
  const m = /^proxmox:\/\/(\[[0-9A-Fa-f:.]+\]|[^/:\s[\]]+)(?::(\d+))?(?:\/.*)?$/i.exec(spec.trim());
  const port = m?.[2] ? Number(m[2]) : 8006;
  if (!m || port < 1 || port > 65535)
    throw new AgentKeepError(
      'BadTarget',
      `"${spec}" does not name a Proxmox host.`,
      'Write proxmox://HOST[:PORT], e.g. proxmox://pve.lan.',
    );
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

/**
 * Agents in the cluster: guests (not templates) carrying `tag` (default "agent"; "" = every guest),
 * from GET /cluster/resources?type=vm (items the token may see). Sorted by node, then vmid.
 * @throws AgentKeepError BadTarget, AuthFailed, Hypervisor
 */
export async function discoverAgents(
  hostTarget: string,
  tag = 'agent',
  env: NodeJS.ProcessEnv = process.env,
  log?: (l: string) => void,
): Promise<DiscoveredAgent[]> {
  const { host, port } = parseHost(hostTarget);
  const client = new PveClient(connectionFromEnv(host, port, env, log));
  try {
    const hostPart = host.includes(':') ? `[${host}]` : host.toLowerCase();
    const out: DiscoveredAgent[] = [];
    for (const r of await client.resources()) {
      if ((r.type !== 'qemu' && r.type !== 'lxc') || bool(r.template)) continue;
      const tags = (r.tags ?? '').split(/[;,\s]+/).filter(Boolean);
      if (tag && !tags.includes(tag)) continue;
      out.push({
        target: `proxmox://${hostPart}${port === 8006 ? '' : `:${port}`}/${r.node}/${r.type}/${r.vmid}`,
        ...(r.name ? { name: r.name } : {}),
        node: r.node,
        vmid: Number(r.vmid),
        type: r.type,
        status: r.status,
        ...(r.lock ? { lock: r.lock } : {}),
        tags,
      });
    }
    return out.sort((a, b) => a.node.localeCompare(b.node) || a.vmid - b.vmid);
  } finally {
    client.close();
  }
}

/** agent/file-read returns at most 16 MiB (qemu-server Agent.pm `$MAX_READ_SIZE`). */
export const GUEST_READ_MAX = 16 * 1024 * 1024;

function guestAgentApi(
  client: PveClient,
  node: string,
  vmid: number,
): {
  read(file: string): Promise<{ content: string; truncated?: number | boolean }>;
  write(file: string, content: string): Promise<null>;
} {
  const a = (
    client.api.nodes.$(node).qemu.$(vmid) as unknown as {
      agent: Record<string, { $get(p: object): Promise<never>; $post(p: object): Promise<never> }>;
    }
  ).agent;
  return {
    read: (file) => a['file-read'].$get({ file }),
    write: (file, content) => a['file-write'].$post({ file, content }),
  };
}

async function guestAgentCall<T>(backend: ProxmoxBackend, file: string, fn: (node: string) => Promise<T>): Promise<T> {
  const pt = backend.pt;
  if (pt.type === 'lxc') {
    throw new AgentKeepError(
      'Unsupported',
      `Containers have no guest agent, so AgentKeep cannot read or write ${file} in CT ${pt.vmid} through the API.`,
      'Use a store on a path the sidecar can reach (e.g. a bind mount), or pct pull/push on the node.',
    );
  }
  const node = await backend.client.ownerNode(pt.node, pt.type, pt.vmid);
  try {
    return await fn(node);
  } catch (e) {
    if (
      e instanceof PveError &&
      /agent is not running|No QEMU guest agent|not configured|guest agent/i.test(e.reason)
    ) {
      throw new AgentKeepError(
        'Unsupported',
        `The QEMU guest agent of VM ${pt.vmid} does not answer (${e.reason}).`,
        'Install and start qemu-guest-agent in the VM and enable it in Proxmox (VM > Options > QEMU Guest Agent), then restart the VM.',
      );
    }
    throw e;
  }
}

/**
 * Read a file in a VM through the QEMU guest agent (GET /nodes/{node}/qemu/{vmid}/agent/file-read; needs VM.Monitor).
 * @returns the content as a Buffer (Proxmox hands it over as a binary string)
 * @throws AgentKeepError Unsupported (lxc, agent not running), FileError (larger than 16 MiB), AuthFailed, Hypervisor
 */
export async function guestFileRead(backend: ProxmoxBackend, file: string): Promise<Buffer> {
  return guestAgentCall(backend, file, async (node) => {
    const r = await guestAgentApi(backend.client, node, backend.pt.vmid).read(file);
    if (bool(r.truncated))
      throw new AgentKeepError(
        'FileError',
        `${file} in VM ${backend.pt.vmid} is larger than 16 MiB, the most the guest agent returns.`,
        'Keep agent-state files small, or reach them another way (a shared folder).',
      );
    return Buffer.from(r.content ?? '', 'latin1');
  });
}

/**
 * Write a file in a VM through the QEMU guest agent (POST .../agent/file-write, content at most
 * 61440 bytes; needs VM.Monitor). Replaces the file.
 * @throws AgentKeepError FileError (too large), Unsupported (lxc, agent not running), AuthFailed, Hypervisor
 */
export async function guestFileWrite(backend: ProxmoxBackend, file: string, content: string): Promise<void> {
  const n = Buffer.byteLength(content, 'utf8');
  if (n > GUEST_WRITE_MAX) {
    throw new AgentKeepError(
      'FileError',
      `${file} would be ${n} bytes; the guest agent writes at most ${GUEST_WRITE_MAX} bytes per call.`,
      'Shorten the content; nothing was written.',
    );
  }
  await guestAgentCall(backend, file, (node) =>
    guestAgentApi(backend.client, node, backend.pt.vmid).write(file, content),
  );
}
