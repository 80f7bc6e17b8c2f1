/**
 * Registry of machine backends. A new backend is one folder (sidecar/machine/<name>/) whose
 * BackendFactory owns its target strings (parse, forms), describes its targets (capabilities, local
 * root) and builds the backend, plus one registration line below. The core only splits off the
 * scheme and dispatches here (sidecar/core/target.ts).
 */
import { AgentKeepError } from '../core/errors';
import { btrfsBackend } from './btrfs';
import { dirBackend } from './dir';
import { qemuBackend } from './qemu';
import { proxmoxBackend } from './proxmox';
import type { BackendContext, BackendFactory, MachineBackend } from './types';

export type * from './types';

const registry = new Map<string, BackendFactory>();

/**
 * Register a backend family under its scheme (lower case). The first one registered is the default:
 * its form is the hint for a target with no scheme. Registering a scheme again replaces it.
 */
export function registerBackend<O>(f: BackendFactory<O>): void {
  registry.set(f.scheme.toLowerCase(), f as BackendFactory);
}

// ---- registrations (one line per backend; the first is the default) ----
registerBackend(dirBackend);
registerBackend(btrfsBackend);
registerBackend(qemuBackend);
registerBackend(proxmoxBackend);

/** All registered backend families, in registration order. */
export function backends(): BackendFactory[] {
  return [...registry.values()];
}

/** The backend family serving `scheme` (case-insensitive), or undefined. */
export function backendFactory(scheme: string): BackendFactory | undefined {
  return registry.get(scheme.toLowerCase());
}

/** The default backend family (the first registered: dir). */
export function defaultBackend(): BackendFactory {
  const [first] = registry.values();
  if (!first) {
    throw new AgentKeepError(
      'Internal',
      'No machine backend is registered.',
      'Register one in sidecar/machine/index.ts.',
    );
  }
  return first;
}

/**
 * The backend for a parsed target.
 * @throws AgentKeepError BadTarget when no backend serves the target's scheme.
 */
export function backendFor(ctx: BackendContext): MachineBackend {
  const f = backendFactory(ctx.target.backend);
  if (!f) {
    const msg = `No machine backend for "${ctx.target.backend}:" targets.`;
    throw new AgentKeepError('BadTarget', msg, `Use ${defaultBackend().forms[0]}.`);
  }
  return f.create(ctx);
}
