/**
 * Test helpers for the Proxmox backend: a started contract simulator (test/pve-sim) with a token,
 * and backends bound to its guests, with every log line captured.
 */
import { ProxmoxBackend, type PveClientOptions } from '../../../sidecar/machine/proxmox';
import { parseTarget } from '../../../sidecar/core/target';
import { PveSim, makeCert, type SimCert, type SimOptions } from '../../pve-sim/server';

export const TOKEN_ID = 'agentkeep@pve!ak';
/** A secret that is easy to search for in captured output. */
export const TOKEN_SECRET = 'f00dcafe-5ec2-4e7a-9b1d-5ec2e75ec2e7';

let certCache: SimCert | undefined;
/** One self-signed certificate per test run (openssl takes ~100 ms). */
export function simCert(): SimCert {
  certCache ??= makeCert();
  return certCache;
}

/** Start a simulator accepting TOKEN_ID/TOKEN_SECRET (and the user agentkeep@pve / pw-secret-42). */
export async function startSim(o: SimOptions = {}): Promise<PveSim> {
  const sim = new PveSim({
    token: { id: TOKEN_ID, secret: TOKEN_SECRET },
    user: { name: 'agentkeep@pve', password: 'pw-secret-42' },
    cert: simCert(),
    ...o,
  });
  await sim.start();
  return sim;
}

/** Environment with the token and the simulator's fingerprint. */
export function simEnv(sim: PveSim, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    AGENTKEEP_PVE_TOKEN: `${TOKEN_ID}=${TOKEN_SECRET}`,
    AGENTKEEP_PVE_FINGERPRINT: sim.cert.fingerprint,
    ...extra,
  };
}

/** Fast polling for tests. */
export const FAST: PveClientOptions = { pollMinMs: 5, pollMaxMs: 40, reconcileMs: 600, taskTimeoutMs: 10_000 };

/** A backend for guest `vmid` of the simulator; `logs` receives every request line. */
export function simBackend(
  sim: PveSim,
  vmid: number,
  o: { type?: 'qemu' | 'lxc'; node?: string; opts?: PveClientOptions; env?: NodeJS.ProcessEnv; logs?: string[] } = {},
): ProxmoxBackend {
  const t = parseTarget(`proxmox://127.0.0.1:${sim.port}/${o.node ?? '-'}/${o.type ?? 'qemu'}/${vmid}`);
  const logs = o.logs;
  return new ProxmoxBackend(t, { ...FAST, ...o.opts }, o.env ?? simEnv(sim), logs ? (l) => logs.push(l) : undefined);
}

/** The rejection of `p` (fails the test when `p` resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { kind?: string; hint?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { kind?: string; hint?: string };
  }
  throw new Error('expected a rejection, but the call succeeded');
}
