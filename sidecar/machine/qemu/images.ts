/**
 * Offline access to a stopped VM's qcow2 images with `qemu-img` (qemu-utils), and the qemu backend's
 * own records in the state dir:
 *   qemu/<targetKey>/images.json   the VM's snapshot disks as last seen over QMP (for offline listing)
 *   qemu/<targetKey>/<id>.json     one snapshot: tag, disks (node, image file), vmstate node
 * Both written atomically (temp + rename). Source of the qemu-img behaviour: qemu-img(1);
 * observed with QEMU 7.2 (../shared/reference/proxmox-and-qemu.md §4).
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { isErrno, readJsonIfExists, writeJsonAtomic } from '../../core/fsutil';
import type { StateLayout } from '../../core/state';

/** One snapshot disk of the VM: its qcow2 format node and the image file under it. */
export interface QemuDisk {
  /** Block node name (QMP `node-name` of the format node, e.g. `disk0`, or QEMU's `#block123`). */
  node: string;
  /** Guest device it is attached to (QMP `device`/`qdev`), when known. */
  device?: string;
  /** Image file as QEMU reports it (absolute when it could be resolved). */
  file: string;
  /** Block driver of the format node (`qcow2`). */
  format: string;
}

/** What the backend records per snapshot (qemu/<key>/<id>.json). */
export interface QemuSnapshotRecord {
  v: 1;
  /** Restore point id = QEMU snapshot tag. */
  tag: string;
  /** The disks snapshot-save was given, in order. */
  disks: QemuDisk[];
  /** The node that holds the RAM state (the first qcow2 disk). */
  vmstateNode: string;
  /** ISO 8601 UTC. */
  createdAt: string;
  /** Bytes of RAM state QEMU stored (QMP `vm-state-size`). */
  vmStateSize: number;
}

/** One snapshot inside a qcow2 image (qemu-img info `snapshots[]`, QMP `image.snapshots[]`). */
export interface ImageSnapshot {
  id: string;
  name: string;
  'vm-state-size': number;
  'date-sec': number;
  'date-nsec'?: number;
  'vm-clock-sec'?: number;
}

/** The qemu backend's directory for one target. */
export function qemuStateDir(layout: StateLayout, targetKey: string): string {
  return path.join(layout.root, 'qemu', targetKey);
}

/** Read a snapshot record; undefined when there is none (made before AgentKeep recorded it, or deleted). */
export async function readRecord(dir: string, id: string): Promise<QemuSnapshotRecord | undefined> {
  try {
    return await readJsonIfExists<QemuSnapshotRecord>(path.join(dir, `${id}.json`));
  } catch {
    return undefined; // damaged: the backend falls back to discovery
  }
}

/** Write a snapshot record atomically. */
export async function writeRecord(dir: string, rec: QemuSnapshotRecord): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  await writeJsonAtomic(path.join(dir, `${rec.tag}.json`), rec);
}

/** Remove a snapshot record (absent is fine). */
export async function removeRecord(dir: string, id: string): Promise<void> {
  await fs.rm(path.join(dir, `${id}.json`), { force: true });
}

/** Remember the VM's snapshot disks (for listing while the VM is stopped). */
export async function writeImages(dir: string, target: string, disks: QemuDisk[]): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  await writeJsonAtomic(path.join(dir, 'images.json'), { target, disks, updatedAt: new Date().toISOString() });
}

/** The VM's snapshot disks as last recorded; undefined when AgentKeep never saw the VM running. */
export async function readImages(dir: string): Promise<QemuDisk[] | undefined> {
  try {
    return (await readJsonIfExists<{ disks: QemuDisk[] }>(path.join(dir, 'images.json')))?.disks;
  } catch {
    return undefined;
  }
}

/** Run qemu-img; resolves stdout, rejects with its stderr text. */
function qemuImg(args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('qemu-img', args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      if (isErrno(err, 'ENOENT')) {
        return reject(
          new AgentKeepError(
            'Unsupported',
            'qemu-img is not installed, so the snapshots of a stopped VM cannot be read.',
            'Install it (Debian/Ubuntu: apt-get install qemu-utils), or start the VM.',
          ),
        );
      }
      reject(new Error((stderr || err.message).trim()));
    });
  });
}

/**
 * The internal snapshots of a qcow2 image: `qemu-img info -U --output=json FILE` (`-U` = force-share,
 * so it also works while a VM holds the image's write lock).
 * @throws AgentKeepError TargetNotFound when the image is missing or unreadable, Unsupported without qemu-img.
 */
export async function imageSnapshots(file: string): Promise<ImageSnapshot[]> {
  let out: string;
  try {
    out = await qemuImg(['info', '-U', '--output=json', file]);
  } catch (e) {
    if (e instanceof AgentKeepError) throw e;
    throw new AgentKeepError(
      'TargetNotFound',
      `Cannot read the VM image ${file}: ${(e as Error).message}`,
      'Check that the image still exists at that path (AgentKeep recorded it while the VM ran), or start the VM.',
    );
  }
  const info = JSON.parse(out) as { snapshots?: ImageSnapshot[] };
  return info.snapshots ?? [];
}

/**
 * Delete snapshot `tag` from a qcow2 image of a stopped VM: `qemu-img snapshot -d TAG FILE`. A tag
 * the image does not hold counts as deleted.
 * @throws AgentKeepError Hypervisor with qemu-img's text (e.g. the image is in use: "Failed to get
 *   \"write\" lock"), Unsupported without qemu-img.
 */
export async function deleteImageSnapshot(file: string, tag: string): Promise<void> {
  try {
    await qemuImg(['snapshot', '-d', tag, file]);
  } catch (e) {
    if (e instanceof AgentKeepError) throw e;
    const msg = (e as Error).message;
    if (/snapshot not found/i.test(msg)) return;
    throw new AgentKeepError(
      'Hypervisor',
      `qemu-img could not delete snapshot ${tag} from ${file}: ${msg}`,
      /lock/i.test(msg)
        ? 'Another process (a running QEMU?) uses the image: start the VM with its QMP socket and delete again.'
        : 'Check the image with qemu-img check.',
    );
  }
}
