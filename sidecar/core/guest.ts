/**
 * Guest I/O and agent discovery, through the target's backend: files inside a guest (Proxmox: a VM
 * through the QEMU guest agent; the CLI's guest read and guest write), and agent.discover (Proxmox:
 * guests with a tag). Backends without them are refused with Unsupported. A guest write keeps the
 * old content of the file first (<stateDir>/guest-backups/).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { MachineBackend } from '../machine';
import type { ParamsOf, ResultOf, TargetDescription } from '../protocol';
import type { CoreContext } from './context';
import { AgentKeepError } from './errors';
import { describeParsedTarget, discoverAgents as discoverOnHost } from './target';

/**
 * Read a file inside a guest through its backend (Proxmox: agent/file-read, at most 16 MiB): for
 * agent-state files (memory) that live in the guest.
 * @throws InvalidParams (not an absolute path), BadTarget, Unsupported (a backend without guest
 *   access, LXC, agent not running), FileError, AuthFailed, Hypervisor
 */
export async function guestFileRead(ctx: CoreContext, target: string, file: string): Promise<Buffer> {
  return (await guestBackend(ctx, target, file)).readGuestFile(file);
}

/**
 * Refuse content larger than one guest write of the target's backend sends
 * (capabilities.guestWriteMaxBytes, Proxmox 61440 bytes); the CLI checks before it asks, the write again.
 * @throws AgentKeepError FileError naming the size and the limit
 */
export function checkGuestWriteSize(d: TargetDescription, bytes: number): void {
  const max = d.capabilities.guestWriteMaxBytes;
  if (max !== undefined && bytes > max) {
    throw new AgentKeepError(
      'FileError',
      `The content is ${bytes} bytes; the guest agent writes at most ${max} bytes per call. ` +
        'Nothing was written (and no backup was made).',
      'Shorten the content.',
    );
  }
}

/**
 * Replace a file inside a guest through its backend (Proxmox: agent/file-write, at most 61440 bytes
 * of content, target.describe `capabilities.guestWriteMaxBytes`). Nothing is lost: when the file
 * exists, its current content is saved first under `<stateDir>/guest-backups/` (mode 600, named by
 * time, guest and file name), so every front end gets the backup.
 * @returns bytes written, and the backup's absolute path (absent for a new file)
 * @throws as guestFileRead; FileError when the content is too large or the backup cannot be written
 *   (nothing written either way)
 */
export async function guestFileWrite(
  ctx: CoreContext,
  target: string,
  file: string,
  content: string,
): Promise<{ bytes: number; backup?: string }> {
  const g = await guestBackend(ctx, target, file);
  const bytes = Buffer.byteLength(content, 'utf8');
  checkGuestWriteSize(g.description, bytes);
  const old = await g.readGuestFile(file).catch((e: unknown) => {
    if (/No such file or directory/i.test(e instanceof Error ? e.message : String(e))) return undefined; // a new file
    throw e;
  });
  let backup: string | undefined;
  if (old) {
    const dir = ctx.layout.guestBackupsDir;
    // the target without its scheme, e.g. pve.lan_pve1_qemu_101
    const d = g.description;
    const guestName = d.target
      .slice(d.backend.length + 1)
      .replace(/^\/+/, '')
      .replace(/[^A-Za-z0-9._-]+/g, '_');
    backup = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${guestName}-${path.basename(file)}`);
    try {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      await fs.writeFile(backup, old, { mode: 0o600 });
    } catch (e) {
      const why =
        `Cannot save the old content of ${file} to ${backup}: ${(e as Error).message}. ` +
        'Nothing was written to the guest.';
      throw new AgentKeepError('FileError', why, `Make ${dir} writable, or free space in the state dir.`);
    }
  }
  await g.writeGuestFile(file, content);
  return { bytes, ...(backup ? { backup } : {}) };
}

type GuestFiles = Required<Pick<MachineBackend, 'readGuestFile' | 'writeGuestFile'>> & {
  description: TargetDescription;
};

async function guestBackend(ctx: CoreContext, target: string, file: string): Promise<GuestFiles> {
  if (!file.startsWith('/')) {
    const hint = 'Give the path inside the VM, e.g. /root/.hermes/memories/MEMORY.md.';
    throw new AgentKeepError('InvalidParams', `Guest file "${file}" is not an absolute path.`, hint);
  }
  const t = await ctx.open(target, { mustExist: false });
  const b = t.backend;
  if (!b.readGuestFile || !b.writeGuestFile) {
    const root = describeParsedTarget(t.target).localRoot;
    throw new AgentKeepError(
      'Unsupported',
      `Guest file access needs a target whose backend reaches files inside the guest (a Proxmox VM), not ${t.target.spec}.`,
      root ? `Read and write the file under ${root} directly.` : 'Reach the file through the machine (e.g. over SSH).',
    );
  }
  return {
    readGuestFile: (f) => b.readGuestFile!(f),
    writeGuestFile: (f, c) => b.writeGuestFile!(f, c),
    description: describeParsedTarget(t.target),
  };
}

/**
 * See Methods.agentDiscover: agents the credentials can see, from the backend of the target's
 * scheme that discovers agents (Proxmox: guests with a tag, default "agent").
 * @throws BadTarget, Unsupported (backends without discovery), AuthFailed, Hypervisor
 */
export async function discoverAgents(p: ParamsOf<'agentDiscover'>): Promise<ResultOf<'agentDiscover'>> {
  return discoverOnHost(p.target, p.tag ?? 'agent');
}
