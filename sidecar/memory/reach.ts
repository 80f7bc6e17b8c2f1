/**
 * How a store's machine is reached (from its location: this machine, SSH, a VM's guest agent), and
 * the stores found inside a Proxmox VM by probing it through its guest agent: Hermes homes
 * (/root/.hermes, /home/NAME/.hermes, the HERMES_HOME of a running process, their profiles/NAME) and
 * Agent Zero roots (/a0, /root/agent-zero, /opt/agent-zero, /home/NAME/agent-zero with a usr/memory or
 * memory folder). Each candidate is kept only when its store's check() passes through the agent.
 */
import type { StoreReachVia } from '../protocol';
import { GuestAgentTransport } from './transport/guestAgent';
import { PveAgentChannel, pveAgentUrl, type PveAgentLocation } from './transport/pveAgent';

/** How the machine of a store at `location` (MemoryStoreAdapter.location) is reached, in words. */
export function storeVia(location: string): { via: StoreReachVia; how: string } {
  const ssh = /^ssh:\/\/([^/]+)\//.exec(location);
  if (ssh) return { via: 'ssh', how: `over SSH to ${decodeURIComponent(ssh[1])}` };
  if (/^pve-agent:\/\//.test(location))
    return { via: 'guest-agent', how: "through the QEMU guest agent (Proxmox's agent/file-read, file-write, exec)" };
  const qga = /^qga:(\/[^:]*):/.exec(location);
  if (qga) return { via: 'guest-agent', how: `through the QEMU guest agent socket ${qga[1]}` };
  return { via: 'local', how: 'on this machine' };
}

/** The probe run in the guest: one "<kind> <abs path>" line per candidate. */
const PROBE = String.raw`
homes() {
  for h in /root/.hermes /home/*/.hermes; do echo "$h"; done
  for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null | sed -n 's/^HERMES_HOME=//p'; done
}
homes | sort -u | while read -r h; do
  [ -d "$h" ] || continue
  { [ -d "$h/memories" ] || [ -f "$h/config.yaml" ]; } && echo "hermes $h"
  for p in "$h"/profiles/*; do [ -d "$p/memories" ] && echo "hermes $p"; done
done
for r in /a0 /root/agent-zero /opt/agent-zero /home/*/agent-zero; do
  { [ -d "$r/usr/memory" ] || [ -d "$r/memory" ]; } && echo "agent-zero $r"
done
exit 0`;

/**
 * Memory stores found inside a Proxmox VM through its guest agent (see the module doc), as store
 * strings `<kind>:pve-agent://HOST:PORT/NODE/VMID/abs/path`, in probe order.
 * @param check the store's check (openStore(spec).check(): passed in, so this module needs no registry)
 * @throws AgentKeepError as the guest agent transport: Unsupported (no agent configured or running,
 *   naming the fix), StoreNotFound (VM stopped), AuthFailed (no VM.Monitor)
 */
export async function probeGuestStores(
  g: Omit<PveAgentLocation, 'path'>,
  check: (spec: string) => Promise<void>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  const channel = new PveAgentChannel(g, env);
  try {
    const io = new GuestAgentTransport(channel);
    const r = await io.exec(['sh', '-c', PROBE], { timeoutMs: 20_000 });
    const out: string[] = [];
    for (const line of r.stdout.toString('utf8').split('\n')) {
      const m = /^(hermes|agent-zero) (\/.+)$/.exec(line.trim());
      if (!m) continue;
      const spec = `${m[1]}:${pveAgentUrl(g, m[2])}`;
      if (out.includes(spec)) continue;
      const ok = await check(spec).then(
        () => true,
        () => false,
      );
      if (ok) out.push(spec);
    }
    return out;
  } finally {
    channel.close();
  }
}
