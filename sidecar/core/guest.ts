/**
 * Proxmox guest I/O and agent discovery: files inside a Proxmox VM through the QEMU guest agent
 * (the CLI's guest read and guest write), and agent.discover (guests with a tag).
 */
import {
  discoverAgents as discoverProxmoxAgents,
  guestFileRead as readInGuest,
  guestFileWrite as writeInGuest,
  ProxmoxBackend,
} from '../machine/proxmox';
import type { ParamsOf, ResultOf } from '../protocol';
import type { CoreContext } from './context';
import { AgentKeepError } from './errors';

/**
 * Read a file inside a Proxmox VM through the QEMU guest agent (agent/file-read, at most 16 MiB):
 * for agent-state files (memory) that live in the guest.
 * @throws InvalidParams (not an absolute path), BadTarget, Unsupported (not a proxmox qemu target,
 *   LXC, agent not running), FileError, AuthFailed, Hypervisor
 */
export async function guestFileRead(ctx: CoreContext, target: string, file: string): Promise<Buffer> {
  return readInGuest(await guestBackend(ctx, target, file), file);
}

/**
 * Replace a file inside a Proxmox VM through the QEMU guest agent (agent/file-write, at most 61440
 * bytes of content).
 * @throws as guestFileRead; FileError when the content is too large (nothing written)
 */
export async function guestFileWrite(ctx: CoreContext, target: string, file: string, content: string): Promise<void> {
  await writeInGuest(await guestBackend(ctx, target, file), file, content);
}

async function guestBackend(ctx: CoreContext, target: string, file: string): Promise<ProxmoxBackend> {
  if (!file.startsWith('/')) throw new AgentKeepError('InvalidParams', `Guest file "${file}" is not an absolute path.`, 'Give the path inside the VM, e.g. /root/.hermes/memories/MEMORY.md.');
  const t = await ctx.open(target, { mustExist: false });
  if (!(t.backend instanceof ProxmoxBackend)) {
    throw new AgentKeepError('Unsupported', `Guest file access needs a proxmox:// VM target, not ${t.target.spec}.`, 'For dir: and btrfs: targets read the file directly; for qemu: targets use the VM itself.');
  }
  return t.backend;
}

/**
 * See Methods.agentDiscover: agents the credentials can see (Proxmox: guests with a tag, default "agent").
 * @throws BadTarget, Unsupported (backends without discovery), AuthFailed, Hypervisor
 */
export async function discoverAgents(p: ParamsOf<'agentDiscover'>): Promise<ResultOf<'agentDiscover'>> {
  if (!/^proxmox:/i.test(p.target.trim())) throw new AgentKeepError('Unsupported', 'Agent discovery needs a proxmox:// target.', 'Give proxmox://HOST[:PORT].');
  return discoverProxmoxAgents(p.target, p.tag ?? 'agent');
}
