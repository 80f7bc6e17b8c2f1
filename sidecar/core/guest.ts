/**
 * Guest I/O and agent discovery, through the target's backend: files inside a guest (Proxmox: a VM
 * through the QEMU guest agent; the CLI's guest read and guest write), and agent.discover (Proxmox:
 * guests with a tag). Backends without them are refused with Unsupported.
 */
import type { MachineBackend } from '../machine';
import type { ParamsOf, ResultOf } from '../protocol';
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
 * Replace a file inside a guest through its backend (Proxmox: agent/file-write, at most 61440 bytes
 * of content, target.describe `capabilities.guestWriteMaxBytes`).
 * @throws as guestFileRead; FileError when the content is too large (nothing written)
 */
export async function guestFileWrite(ctx: CoreContext, target: string, file: string, content: string): Promise<void> {
  await (await guestBackend(ctx, target, file)).writeGuestFile(file, content);
}

type GuestFiles = Required<Pick<MachineBackend, 'readGuestFile' | 'writeGuestFile'>>;

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
  return { readGuestFile: (f) => b.readGuestFile!(f), writeGuestFile: (f, c) => b.writeGuestFile!(f, c) };
}

/**
 * See Methods.agentDiscover: agents the credentials can see, from the backend of the target's
 * scheme that discovers agents (Proxmox: guests with a tag, default "agent").
 * @throws BadTarget, Unsupported (backends without discovery), AuthFailed, Hypervisor
 */
export async function discoverAgents(p: ParamsOf<'agentDiscover'>): Promise<ResultOf<'agentDiscover'>> {
  return discoverOnHost(p.target, p.tag ?? 'agent');
}
