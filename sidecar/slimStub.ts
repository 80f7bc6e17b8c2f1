/**
 * What stands in, in the slim create bundle (out/create.js, ./createMain.ts), for the modules that a
 * create of a `dir:` target with stores on this machine never uses: the Proxmox backend's code (it
 * brings proxmox-api) and the ssh / guest-agent transports of remote stores (ssh2, the QGA and
 * Proxmox agent channels). esbuild.mjs resolves those imports to this module for that bundle only;
 * the full CLI and the servers bundle the real ones.
 *
 * The Proxmox backend keeps its real target forms, parse and describe (../machine/proxmox/target.ts:
 * a named agent's Proxmox target still parses while the create looks for the agent of its target);
 * anything that would reach a Proxmox host or a remote store throws an Internal error, which the
 * launcher's selection (./cli/slimCreate.ts, ./createMain.ts) is there to make unreachable.
 */
import { AgentKeepError } from './core/errors';
import { PROXMOX_FAMILY, type ProxmoxTarget } from './machine/proxmox/target';
import type { BackendFactory, MachineBackend } from './machine/types';

function notHere(what: string): AgentKeepError {
  return new AgentKeepError(
    'Internal',
    `${what} is not in the slim create (out/create.js): the launcher should have run the full CLI for this command line.`,
    'Run it with AGENTKEEP_SLIM_CREATE=0 (the full CLI), and report this as a bug.',
  );
}

/** The `proxmox` backend family without its backend (see the module doc; the same fields as ./machine/proxmox/index.ts). */
export const proxmoxBackend: BackendFactory<ProxmoxTarget> = {
  ...PROXMOX_FAMILY,
  create(): MachineBackend {
    throw notHere('The Proxmox backend');
  },
  discover: {
    form: 'proxmox://HOST[:PORT]',
    run: () => Promise.reject(notHere('agent.discover')),
  },
};

/** Stand-ins of the remote stores' transports and channels (memory/transport/ssh.ts, guestAgent.ts, pveAgent.ts). */
export class SshTransport {
  constructor() {
    throw notHere('The ssh transport of a remote store');
  }
}
export class GuestAgentTransport {
  constructor() {
    throw notHere('The guest-agent transport of a store in a VM');
  }
}
export class QgaSocketChannel {
  constructor() {
    throw notHere('The QEMU guest agent channel');
  }
}
export class PveAgentChannel {
  constructor() {
    throw notHere('The Proxmox guest agent channel');
  }
}
/** As memory/transport/pveAgent.ts pveAgentUrl (only named in messages). */
export function pveAgentUrl(): string {
  throw notHere('The Proxmox guest agent channel');
}
