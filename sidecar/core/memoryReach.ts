/**
 * agent.memoryReach: whether an agent's memory can be read and how (issue 11 item 5): through the
 * stores named in its config, or, when none are named, the stores found in the target (a local
 * tree, or a Proxmox VM probed through its QEMU guest agent). Policy lives here so every front end
 * (the Agent view, the Agents list, the CLI) says the same thing. Reads only.
 */
import { describeAdapter, openStore, probeGuestStores, storeVia } from '../memory';
import type { ParamsOf, ResultOf } from '../protocol';
import type { CoreContext } from './context';
import { detectTargetStores } from './detect';
import { asAgentKeepError } from './errors';
import { describeParsedTarget, resolveTarget } from './target';

type Reach = ResultOf<'agentMemoryReach'>;

/**
 * See Methods.agentMemoryReach. Never throws for an unreachable guest or store (reported instead).
 * @throws BadTarget for a target string that does not parse
 */
export async function agentMemoryReach(_ctx: CoreContext, p: ParamsOf<'agentMemoryReach'>): Promise<Reach> {
  const target = await resolveTarget(p.target);
  const d = describeParsedTarget(target);
  let specs = [...(p.stores ?? [])];
  const found = !specs.length;
  const none = (reason: string, hint: string): Reach => ({
    target: p.target,
    reachable: false,
    via: 'none',
    how: 'not reachable',
    reason,
    hint,
    found,
    stores: [],
  });
  if (found) {
    if (d.localRoot) specs = (await detectTargetStores(target)).map((s) => s.spec);
    else if (d.guest?.type === 'qemu') {
      try {
        specs = await probeGuestStores(
          { host: d.guest.host, port: d.guest.port, node: d.guest.node, vmid: d.guest.vmid },
          (spec) => openStore(spec).check(),
        );
      } catch (e) {
        const a = asAgentKeepError(e);
        return none(a.message, a.hint ?? 'Name the store in the agent config (agent add NAME --store …).');
      }
      if (!specs.length)
        return none(
          `No Hermes home (/root/.hermes, /home/NAME/.hermes, a running HERMES_HOME) and no Agent Zero folder ` +
            `(/a0, ~/agent-zero with usr/memory) was found in VM ${d.guest.vmid} through its guest agent.`,
          'Name the store: agent add NAME --target … --store hermes:/abs/path/to/.hermes --via guest-agent.',
        );
    } else if (d.guest?.type === 'lxc')
      return none(
        `Containers have no QEMU guest agent, so AgentKeep cannot look inside CT ${d.guest.vmid} through the API.`,
        'Name the store over SSH (agent add NAME --target … --store hermes:/root/.hermes --ssh root@CT-ADDRESS), ' +
          'or a bind mount the sidecar can read.',
      );
    else
      return none(
        `No memory store is named for ${d.name}, and this target has no files AgentKeep can look into.`,
        d.backend === 'qemu'
          ? "Name the store through the VM's guest agent socket: --store hermes:qga:/abs/qga.sock:/root/.hermes " +
              '(QEMU -chardev socket,path=/abs/qga.sock,server=on,wait=off,id=qga0 -device virtio-serial ' +
              '-device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0), or over SSH.'
          : 'Name the store in the agent config: agent add NAME --target … --store hermes:/abs/path/to/.hermes.',
      );
  }
  const stores: Reach['stores'] = [];
  for (const spec of specs) {
    try {
      const s = openStore(spec);
      const description = describeAdapter(s);
      const { via } = storeVia(s.location);
      try {
        await s.check();
        stores.push({ store: spec, via, reachable: true, description });
      } catch (e) {
        stores.push({ store: spec, via, reachable: false, message: asAgentKeepError(e).oneLine(), description });
      }
    } catch (e) {
      stores.push({ store: spec, via: 'none', reachable: false, message: asAgentKeepError(e).oneLine() });
    }
  }
  const ok = stores.find((s) => s.reachable);
  if (ok) {
    const s = openStore(ok.store);
    return { target: p.target, reachable: true, via: ok.via, how: storeVia(s.location).how, found, stores };
  }
  const first = stores[0];
  return {
    target: p.target,
    reachable: false,
    via: 'none',
    how: 'not reachable',
    reason: first?.message ?? 'No memory store was found in the target.',
    hint: 'Fix what the message names, or name the store in the agent config (agent add NAME --store …).',
    found,
    stores,
  };
}
