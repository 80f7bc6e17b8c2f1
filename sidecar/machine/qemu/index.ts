/**
 * The `qemu` backend: restore points of a plain QEMU VM through its QMP unix socket
 * (`qemu:/abs/path/to/qmp.sock`, QEMU started with `-qmp unix:PATH,server=on,wait=off`).
 * A snapshot is a QEMU internal snapshot with RAM state, named with the restore point id (the tag),
 * taken with the `snapshot-save` job on every writable qcow2 disk of the VM (RAM state in the first),
 * rolled back with `snapshot-load`, deleted with `snapshot-delete` (QMP, QEMU >= 6.0). Upstream QEMU
 * pauses the VM for the whole save. Snapshots are opaque (no file diff). See docs/qemu.md.
 */
import * as path from 'node:path';
import { promises as fs } from 'node:fs';
import { deleteAction, listAction } from '../../core/actions';
import { AgentKeepError } from '../../core/errors';
import { isValidId } from '../../core/journal';
import type { TargetDescription } from '../../protocol';
import { parseLocalPathTarget, type LocalPathOptions } from '../localPath';
import type {
  BackendContext,
  BackendFactory,
  MachineBackend,
  RestoreOutcome,
  SnapshotInfo,
  SnapshotMeta,
} from '../types';
import {
  imageSnapshots,
  deleteImageSnapshot,
  qemuStateDir,
  readImages,
  readRecord,
  removeRecord,
  writeImages,
  writeRecord,
  type ImageSnapshot,
  type QemuDisk,
} from './images';
import { QmpClient, QmpCommandError, startHint, type QmpEvent } from './qmp';

export { QmpClient } from './qmp';

/** `query-status` (QAPI StatusInfo): `status` is a RunState (running, paused, restore-vm, ...). */
export interface VmStatus {
  status: string;
  running: boolean;
}

/** Run states in which a snapshot can be taken or loaded. */
const USABLE_STATES = new Set(['running', 'paused', 'suspended']);

/** One `query-block` entry (QAPI BlockInfo), as far as the backend reads it. */
interface BlockInfo {
  device?: string;
  qdev?: string;
  inserted?: {
    'node-name'?: string;
    drv: string;
    ro: boolean;
    file: string;
    image?: { filename?: string; format?: string; snapshots?: ImageSnapshot[] };
  };
}

/** The VM's disks as the backend sees them. */
export interface DiskDiscovery {
  /** Writable qcow2 format nodes: the snapshot disks (RAM state goes to the first). */
  disks: QemuDisk[];
  /** Writable disks of another format (raw, ...): a snapshot cannot be taken while they are attached. */
  refused: QemuDisk[];
  /** Snapshot tags per node. */
  tags: Map<string, ImageSnapshot[]>;
}

/**
 * Find the VM's disks with `query-block`: every inserted, writable medium; qcow2 ones hold snapshots,
 * read-only media (CD-ROMs) are left out. A relative image path is resolved against the QMP socket's
 * directory when the file exists there (QEMU reports paths as given on its command line).
 */
export async function discoverDisks(qmp: QmpClient): Promise<DiskDiscovery> {
  const blocks = await qmp.execute<BlockInfo[]>('query-block');
  const out: DiskDiscovery = { disks: [], refused: [], tags: new Map() };
  for (const b of blocks) {
    const ins = b.inserted;
    if (!ins || ins.ro) continue;
    const node = ins['node-name'];
    const file = await resolveImagePath(ins.image?.filename ?? ins.file, qmp.socketPath);
    const disk: QemuDisk = {
      node: node ?? b.device ?? '?',
      ...(b.device || b.qdev ? { device: b.device || b.qdev } : {}),
      file,
      format: ins.drv,
    };
    if (ins.drv === 'qcow2' && node) {
      out.disks.push(disk);
      out.tags.set(node, ins.image?.snapshots ?? []);
    } else out.refused.push(disk);
  }
  return out;
}

async function resolveImagePath(file: string, socketPath: string): Promise<string> {
  if (path.isAbsolute(file) || file.startsWith('json:')) return file;
  const guess = path.join(path.dirname(socketPath), file);
  return (await fs.stat(guess).then(
    () => true,
    () => false,
  ))
    ? guess
    : file;
}

/** Refuse a VM whose disks cannot hold a snapshot, naming the disk and the fix. */
function assertSnapshotable(d: DiskDiscovery): void {
  const bad = d.refused[0];
  if (bad) {
    const qcow = bad.file.replace(/\.(img|raw)$/i, '') + '.qcow2';
    const what =
      bad.format === 'raw'
        ? 'raw images cannot hold snapshots'
        : `${bad.format} images are not supported by AgentKeep (it snapshots qcow2 images only)`;
    throw new AgentKeepError(
      'Unsupported',
      `Disk ${bad.device ?? bad.node} (${bad.file}) is a ${bad.format} image: ${what}, so QEMU cannot snapshot this VM.`,
      `Convert it with qemu-img convert -O qcow2 ${bad.file} ${qcow} (VM stopped), then start QEMU with the qcow2 file (-blockdev driver=qcow2,...).`,
    );
  }
  if (!d.disks.length) {
    throw new AgentKeepError(
      'Unsupported',
      'The VM has no writable qcow2 disk: QEMU stores a snapshot (and its RAM state) inside a qcow2 image.',
      'Attach a qcow2 disk (qemu-img create -f qcow2 disk.qcow2 10G; -blockdev driver=qcow2,file.driver=file,file.filename=disk.qcow2,node-name=disk0 -device virtio-blk-pci,drive=disk0).',
    );
  }
}

/** The current run state (`query-status`). */
export async function vmStatus(qmp: QmpClient): Promise<VmStatus> {
  const s = await qmp.execute<{ status: string; running: boolean }>('query-status');
  return { status: s.status, running: s.running };
}

/**
 * Whether a failed snapshot-load stopped before it changed anything (QEMU checks that every device
 * holds the tag and that it has RAM state before it reverts the disks; texts of QEMU 7.2
 * migration/savevm.c load_snapshot). Only then is it safe to resume the VM.
 */
export function loadFailedBeforeChanges(error: string): boolean {
  // After the disks were switched: bdrv_all_goto_snapshot ("Could not load snapshot ... on ...") or
  // qemu_loadvm_state ("Error -N while loading VM state").
  if (/Could not load snapshot|while loading VM state/i.test(error)) return false;
  return /does not exist in one or more devices|disk-only snapshot|not found|can't (be )?snapshot|does not support|No block device/i.test(
    error,
  );
}

/**
 * Load snapshot `tag` (the `snapshot-load` job). QEMU resumes a VM that was running; a failed load
 * leaves it paused (status restore-vm). Then: when the load failed before it changed anything and
 * the VM was running, it is resumed (`cont`) and the error says so; otherwise the VM is left paused
 * and the error says how to continue.
 * @returns machineState: running | paused (the VM was paused before) | the RunState.
 * @throws AgentKeepError Hypervisor with QEMU's job error and what state the VM was left in.
 */
export async function loadSnapshot(
  qmp: QmpClient,
  tag: string,
  vmstateNode: string,
  nodes: string[],
): Promise<{ machineState: string; ms: number }> {
  const before = await vmStatus(qmp);
  const job = await qmp.runJob('snapshot-load', { tag, vmstate: vmstateNode, devices: nodes });
  const after = await vmStatus(qmp);
  if (!job.error) return { machineState: after.running ? 'running' : after.status, ms: job.ms };
  const what = `QEMU could not load snapshot ${tag}: ${job.error}.`;
  if (after.running)
    throw new AgentKeepError('Hypervisor', `${what} The VM keeps running as before.`, 'Pick another restore point.');
  if (before.running && loadFailedBeforeChanges(job.error)) {
    await qmp.execute('cont');
    const now = await vmStatus(qmp);
    throw new AgentKeepError(
      'Hypervisor',
      `${what} Nothing was loaded; the failed load had left the VM paused (status ${after.status}), so AgentKeep resumed it (cont): it is ${now.running ? 'running' : now.status} again.`,
      'Pick another restore point.',
    );
  }
  throw new AgentKeepError(
    'Hypervisor',
    `${what} The VM is left paused (status ${after.status})${before.running ? ': the load failed part-way, so its disks may already be at the snapshot while its RAM is not, and resuming it could corrupt the guest' : ' (it was paused before)'}.`,
    `Restore another restore point (or the pre-restore point) to get a consistent VM; resume with the QMP command {"execute":"cont"} only if you accept the risk, or restart QEMU.`,
  );
}

/** Milliseconds the VM spent stopped (QMP STOP .. RESUME events) among `events`. */
function pausedMs(events: QmpEvent[]): number | undefined {
  const t = (e: QmpEvent): number =>
    e.timestamp ? e.timestamp.seconds * 1000 + e.timestamp.microseconds / 1000 : e.receivedAt;
  const stop = events.find((e) => e.event === 'STOP');
  const resume = stop ? events.find((e) => e.event === 'RESUME' && t(e) >= t(stop)) : undefined;
  return stop && resume ? Math.max(0, Math.round(t(resume) - t(stop))) : undefined;
}

/** The qemu backend for one target. */
export class QemuBackend implements MachineBackend {
  readonly name = 'qemu';
  /** RAM state is always saved; upstream snapshot-save stops the VM for the whole save. */
  readonly capabilities = { ramState: true, speedClass: 'fast', canRunWhileRunning: false, diff: false } as const;
  readonly socketPath: string;
  private readonly dir: string;

  constructor(private readonly ctx: BackendContext) {
    this.socketPath = ctx.target.path;
    this.dir = qemuStateDir(ctx.layout, ctx.target.key);
  }

  /** Connect, run `fn`, disconnect (QEMU serves one client per -qmp socket, so never stay connected). */
  private async withQmp<T>(fn: (qmp: QmpClient) => Promise<T>): Promise<T> {
    const qmp = await QmpClient.connect(this.socketPath);
    try {
      return await fn(qmp);
    } catch (e) {
      if (e instanceof QmpCommandError)
        throw new AgentKeepError(
          'Hypervisor',
          `${e.message}.`,
          'Check the VM with QMP query-status; the QEMU version must be 6.0 or newer for snapshot jobs.',
        );
      throw e;
    } finally {
      qmp.close();
    }
  }

  /**
   * The QMP socket answers and `query-status` works.
   * @throws AgentKeepError TargetNotFound (socket missing, refused, busy) with the hint how to start QEMU.
   */
  async check(): Promise<void> {
    await this.withQmp((qmp) => vmStatus(qmp));
  }

  private static checkTag(id: string): void {
    if (!isValidId(id)) {
      throw new AgentKeepError(
        'InvalidParams',
        `"${id}" is not usable as a QEMU snapshot tag (AgentKeep tags: a letter, then letters, digits or _; at most 40 characters).`,
        'Use a restore point id such as ak_20260101_120000_ab12.',
      );
    }
  }

  private static usable(st: VmStatus, what: string): void {
    if (!USABLE_STATES.has(st.status)) {
      const restoreVm = st.status === 'restore-vm' ? ' (a snapshot load failed or is running)' : '';
      throw new AgentKeepError(
        'GuestLocked',
        `The VM is in state ${st.status}${restoreVm}, so ${what}.`,
        'Wait for it to be running or paused (QMP query-status); after a failed load, restore a restore point or resume it with {"execute":"cont"}.',
      );
    }
  }

  /**
   * Take snapshot `snapshotId` (tag = the id) with RAM state of every writable qcow2 disk
   * (`snapshot-save` job, RAM in the first disk). The VM is stopped for the whole save (QMP STOP ..
   * RESUME); the pause is reported in `warnings`. Refuses a tag that any disk already holds (QEMU
   * would fail; qemu-img would even make a duplicate). `vmstate: false` is ignored (warning).
   * @returns files = number of disks; bytes = newBytes = RAM state size (QMP vm-state-size).
   * @throws AgentKeepError InvalidParams (bad tag), Conflict (tag exists), Unsupported (raw disk, no
   *   qcow2 disk), GuestLocked (VM in a state that cannot snapshot), Hypervisor (job error), TargetNotFound.
   */
  async create(snapshotId: string, opts: { meta?: SnapshotMeta; vmstate?: boolean } = {}): Promise<SnapshotInfo> {
    QemuBackend.checkTag(snapshotId);
    return this.withQmp(async (qmp) => {
      const st = await vmStatus(qmp);
      QemuBackend.usable(st, 'no snapshot can be taken');
      const d = await discoverDisks(qmp);
      assertSnapshotable(d);
      for (const disk of d.disks) {
        if (d.tags.get(disk.node)?.some((s) => s.name === snapshotId)) {
          throw new AgentKeepError(
            'Conflict',
            `Image ${disk.file} (node ${disk.node}) already holds a snapshot named ${snapshotId}.`,
            'Take the restore point again (a new id is picked), or delete the old snapshot with QMP snapshot-delete.',
          );
        }
      }
      await writeImages(this.dir, this.ctx.target.spec, d.disks);
      const nodes = d.disks.map((x) => x.node);
      const vmstateNode = nodes[0];
      const firstEvent = qmp.events.length;
      const job = await qmp.runJob('snapshot-save', { tag: snapshotId, vmstate: vmstateNode, devices: nodes });
      if (job.error) {
        const dup = /already exists/i.test(job.error);
        throw new AgentKeepError(
          dup ? 'Conflict' : 'Hypervisor',
          `QEMU could not save snapshot ${snapshotId}: ${job.error}.`,
          dup
            ? 'Take the restore point again (a new id is picked).'
            : 'Check the VM (query-status) and the free space of its image directory.',
        );
      }
      const after = await discoverDisks(qmp);
      const missing = d.disks.filter((x) => !after.tags.get(x.node)?.some((s) => s.name === snapshotId));
      if (missing.length) {
        throw new AgentKeepError(
          'Hypervisor',
          `QEMU reported snapshot ${snapshotId} as saved, but ${missing.map((x) => x.file).join(', ')} do not hold it.`,
          'List the snapshots with qemu-img info -U; delete the partial one with QMP snapshot-delete.',
        );
      }
      const vmStateSize = after.tags.get(vmstateNode)?.find((s) => s.name === snapshotId)?.['vm-state-size'] ?? 0;
      await writeRecord(this.dir, {
        v: 1,
        tag: snapshotId,
        disks: d.disks,
        vmstateNode,
        createdAt: new Date().toISOString(),
        vmStateSize,
      });
      const warnings: string[] = [];
      const paused = pausedMs(qmp.events.slice(firstEvent));
      if (st.running)
        warnings.push(
          `QEMU paused the VM for ${paused ?? job.ms} ms to save its RAM state (upstream snapshot-save is not live).`,
        );
      if (opts.vmstate === false)
        warnings.push('QEMU snapshots always include the RAM state; vmstate: false was ignored.');
      return {
        files: d.disks.length,
        bytes: vmStateSize,
        newBytes: vmStateSize,
        vmstate: true,
        ...(warnings.length ? { warnings } : {}),
      };
    });
  }

  /**
   * Snapshots (tags) every snapshot disk holds, oldest first: over QMP (`query-block`
   * inserted.image.snapshots) while QEMU runs, else offline with `qemu-img info -U --output=json` on
   * the image files recorded at the last create.
   * @throws AgentKeepError TargetNotFound when QEMU is not running and no image paths are recorded.
   */
  async list(): Promise<string[]> {
    let perDisk: ImageSnapshot[][];
    try {
      perDisk = await this.withQmp(async (qmp) => {
        const d = await discoverDisks(qmp);
        return d.disks.map((x) => d.tags.get(x.node) ?? []);
      });
    } catch (e) {
      if (!(e instanceof AgentKeepError) || e.kind !== 'TargetNotFound') throw e;
      const disks = await readImages(this.dir);
      if (!disks?.length) {
        throw new AgentKeepError(
          'TargetNotFound',
          `${e.message} AgentKeep has no record of the VM's image files, so it cannot list them offline either.`,
          startHint(this.socketPath),
        );
      }
      perDisk = [];
      for (const disk of disks) perDisk.push(await imageSnapshots(disk.file));
    }
    return intersectTags(perDisk);
  }

  /**
   * Roll the VM back to snapshot `snapshotId` (disks and RAM: the `snapshot-load` job). Checks first
   * that every disk still holds the tag with RAM state (nothing is touched otherwise). A VM that was
   * running runs on from the snapshot point; one that was paused stays paused unless `start`.
   * @returns machineState running | paused; no file lists (a VM snapshot is opaque).
   * @throws AgentKeepError CorruptSnapshot (tag gone from a disk, disk-only snapshot, disks changed),
   *   GuestLocked, Hypervisor (failed load: see loadSnapshot for the VM's state), TargetNotFound.
   */
  async restore(snapshotId: string, opts: { start?: boolean } = {}): Promise<RestoreOutcome> {
    QemuBackend.checkTag(snapshotId);
    const rec = await readRecord(this.dir, snapshotId);
    return this.withQmp(async (qmp) => {
      const st = await vmStatus(qmp);
      QemuBackend.usable(st, 'no snapshot can be loaded');
      const d = await discoverDisks(qmp);
      assertSnapshotable(d);
      const disks = rec ? rec.disks : d.disks;
      const current = new Set(d.disks.map((x) => x.node));
      const gone = disks.filter((x) => !current.has(x.node));
      if (gone.length) {
        throw new AgentKeepError(
          'CorruptSnapshot',
          `The VM's disks changed since snapshot ${snapshotId}: ${gone.map((x) => `${x.node} (${x.file})`).join(', ')} ${gone.length === 1 ? 'is' : 'are'} no longer attached.`,
          'Start QEMU with the same -blockdev node names as when the restore point was taken, or pick a newer restore point.',
        );
      }
      for (const x of disks) {
        const snap = d.tags.get(x.node)?.find((s) => s.name === snapshotId);
        if (!snap) {
          const target = this.ctx.target.spec;
          throw new AgentKeepError(
            'CorruptSnapshot',
            `Snapshot ${snapshotId} is not in image ${x.file} (node ${x.node}): it was deleted outside AgentKeep. Nothing was changed.`,
            'Pick another restore point, and delete this one.',
            [listAction(target), deleteAction(target, snapshotId)],
          );
        }
      }
      const vmstateNode = rec?.vmstateNode ?? disks[0].node;
      const size = d.tags.get(vmstateNode)?.find((s) => s.name === snapshotId)?.['vm-state-size'] ?? 0;
      if (!size) {
        throw new AgentKeepError(
          'CorruptSnapshot',
          `Snapshot ${snapshotId} has no RAM state in ${vmstateNode}, so QEMU cannot load it into a running VM. Nothing was changed.`,
          'Stop the VM and revert it offline with qemu-img snapshot -a, or pick another restore point.',
        );
      }
      const r = await loadSnapshot(
        qmp,
        snapshotId,
        vmstateNode,
        disks.map((x) => x.node),
      );
      let machineState = r.machineState;
      const warnings: string[] = [];
      if (!st.running && machineState !== 'running') {
        if (opts.start) {
          await qmp.execute('cont');
          machineState = (await vmStatus(qmp)).running ? 'running' : machineState;
        } else
          warnings.push(
            'The VM was paused before the rollback and stays paused: resume it with the QMP command {"execute":"cont"}.',
          );
      }
      return { added: [], removed: [], changed: [], machineState, ...(warnings.length ? { warnings } : {}) };
    });
  }

  /**
   * Delete snapshot `snapshotId`: the `snapshot-delete` job while QEMU runs (a tag no disk holds
   * counts as deleted), else `qemu-img snapshot -d` on the recorded image files of the stopped VM.
   * @throws AgentKeepError Hypervisor (job error, qemu-img error), TargetNotFound (QEMU not running and
   *   no image paths recorded for this snapshot).
   */
  async delete(snapshotId: string): Promise<void> {
    QemuBackend.checkTag(snapshotId);
    const rec = await readRecord(this.dir, snapshotId);
    try {
      await this.withQmp(async (qmp) => {
        const d = await discoverDisks(qmp);
        const have = d.disks.filter((x) => d.tags.get(x.node)?.some((s) => s.name === snapshotId));
        if (!have.length) return;
        const job = await qmp.runJob('snapshot-delete', { tag: snapshotId, devices: have.map((x) => x.node) });
        if (job.error && !/not found|does not exist/i.test(job.error)) {
          throw new AgentKeepError(
            'Hypervisor',
            `QEMU could not delete snapshot ${snapshotId}: ${job.error}.`,
            'Check the VM (query-status) and try again.',
          );
        }
      });
    } catch (e) {
      if (!(e instanceof AgentKeepError) || e.kind !== 'TargetNotFound') throw e;
      const disks = rec?.disks ?? (await readImages(this.dir));
      if (!disks?.length) throw e;
      for (const disk of disks) await deleteImageSnapshot(disk.file, snapshotId);
    }
    await removeRecord(this.dir, snapshotId);
  }
}

/** Tags held by every disk, oldest first (by date of the first disk). */
function intersectTags(perDisk: ImageSnapshot[][]): string[] {
  if (!perDisk.length) return [];
  const [first, ...rest] = perDisk;
  return [...first]
    .sort((a, b) => a['date-sec'] - b['date-sec'] || (a['date-nsec'] ?? 0) - (b['date-nsec'] ?? 0))
    .map((s) => s.name)
    .filter((n, i, all) => all.indexOf(n) === i && rest.every((r) => r.some((s) => s.name === n)));
}

const QEMU_FORM = 'Write the target as qemu:/abs/path/to/qmp.sock (the socket of -qmp unix:PATH,server,nowait).';

/** The qemu backend family (scheme `qemu`): the target names the VM's QMP socket. */
export const qemuBackend: BackendFactory<LocalPathOptions> = {
  scheme: 'qemu',
  prefix: 'qemu:',
  forms: ['qemu:/abs/path/to/qmp.sock'],
  example: 'qemu:/run/agent-vm/qmp.sock',
  formHint: QEMU_FORM,
  parse: (rest, spec) => parseLocalPathTarget('qemu', rest, spec, QEMU_FORM),
  describe: (t): TargetDescription => ({
    target: t.spec,
    backend: 'qemu',
    name: t.spec,
    kind: 'vm',
    // the socket is local, the VM's files are not: no local root
    snapshotNoun: 'snapshot',
    capabilities: {
      ramState: true,
      ramStateOnRequest: false,
      diff: false,
      compare: false,
      readFile: false,
      relabel: false,
      guestAccess: false,
      discover: false,
      startAfterRollback: true,
      rollbackStopsGuest: false,
      speedClass: 'fast',
      canRunWhileRunning: false,
    },
  }),
  create: (ctx: BackendContext) => new QemuBackend(ctx),
};
