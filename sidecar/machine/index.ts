/**
 * Registry of machine backends. A new backend is one folder (sidecar/machine/<name>/) plus one
 * registration line below.
 */
import { AgentKeepError } from '../core/errors';
import { dirBackend } from './dir';
import { qemuBackend } from './qemu';
import { proxmoxBackend } from './proxmox';
import type { BackendContext, BackendFactory, MachineBackend } from './types';

export type * from './types';

const registry = new Map<string, BackendFactory>();

/** Register a backend family under its scheme. */
export function registerBackend(f: BackendFactory): void {
  registry.set(f.scheme, f);
}

// ---- registrations (one line per backend) ----
registerBackend(dirBackend);
registerBackend(qemuBackend);
registerBackend(proxmoxBackend);

/** All registered backend families. */
export function backends(): BackendFactory[] {
  return [...registry.values()];
}

/**
 * The backend for a parsed target.
 * @throws AgentKeepError BadTarget when no backend serves the target's scheme.
 */
export function backendFor(ctx: BackendContext): MachineBackend {
  const f = registry.get(ctx.target.backend);
  if (!f) {
    throw new AgentKeepError('BadTarget', `No machine backend for "${ctx.target.backend}:" targets.`, 'Use dir:/abs/path.');
  }
  return f.create(ctx);
}
