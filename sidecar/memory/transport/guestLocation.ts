/**
 * Where a store inside a VM reached through the QEMU guest agent is: the part after `<kind>:` of
 *   - `qga:/abs/path/to/qga.sock:/abs/path/in/guest` (the guest agent socket on this machine, a
 *     colon, the path inside the guest; the socket path has no colon), e.g.
 *     `hermes:qga:/run/agent-vm/qga.sock:/root/.hermes`;
 *   - `pve-agent://HOST[:PORT]/NODE/VMID/abs/path/in/guest` (Proxmox VE's agent endpoints; NODE may
 *     be `-`), e.g. `hermes:pve-agent://pve.lan/pve1/101/root/.hermes`.
 * No I/O.
 */
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import type { PveAgentLocation } from './pveAgent';

/** A store place behind a guest agent. */
export type GuestAgentPlace = { via: 'qga'; socket: string } | ({ via: 'pve' } & Omit<PveAgentLocation, 'path'>);

/** The forms, for help texts: `<kind>:` + one of these. */
export const GUEST_AGENT_FORMS = ['qga:/abs/qga.sock:/abs/path', 'pve-agent://HOST[:PORT]/NODE/VMID/abs/path'] as const;

/** Whether the part after `<kind>:` names a place behind a guest agent. */
export function isGuestAgentLocation(rest: string): boolean {
  return /^qga:/i.test(rest) || /^pve-agent:\/\//i.test(rest);
}

/**
 * Parse a guest agent place (see the module doc).
 * @param rest the part after `<kind>:` without options
 * @param kind the store kind, for the hint's example
 * @returns the place and the absolute, normalised path inside the guest
 * @throws AgentKeepError BadStore naming the wrong part and the form
 */
export function parseGuestAgentLocation(
  rest: string,
  spec: string,
  kind: string,
): { place: GuestAgentPlace; path: string } {
  const bad = (what: string, form: string, example: string): AgentKeepError =>
    new AgentKeepError(
      'BadStore',
      `Bad guest agent location in store "${spec}": ${what}.`,
      `Use ${form}, e.g. ${example}.`,
    );
  const guestPath = (raw: string, form: string, example: string): string => {
    let p: string;
    try {
      p = decodeURIComponent(raw);
    } catch {
      throw bad('the path is not valid URL encoding', form, example);
    }
    if (!p.startsWith('/') || p === '/') throw bad('no absolute path inside the guest', form, example);
    return path.posix.normalize(p).replace(/\/+$/, '');
  };
  if (/^qga:/i.test(rest)) {
    const form = `${kind}:qga:/abs/path/to/qga.sock:/abs/path/in/guest`;
    const example = `${kind}:qga:/run/agent-vm/qga.sock:/root/.hermes`;
    const body = rest.slice(4);
    const cut = body.indexOf(':/');
    if (!body.startsWith('/') || cut < 0)
      throw bad(
        body.startsWith('/') ? 'no ":/path" inside the guest after the socket' : 'the socket path is not absolute',
        form,
        example,
      );
    const socket = path.resolve(body.slice(0, cut));
    return { place: { via: 'qga', socket }, path: guestPath(body.slice(cut + 1), form, example) };
  }
  const form = `${kind}:pve-agent://HOST[:PORT]/NODE/VMID/abs/path/in/guest`;
  const example = `${kind}:pve-agent://pve.lan/pve1/101/root/.hermes`;
  const m = /^pve-agent:\/\/(\[[0-9A-Fa-f:.]+\]|[^/:\s[\]]+)(?::(\d+))?\/([^/]+)\/([^/]+)(\/.*)?$/i.exec(rest);
  if (!m) throw bad('it is not pve-agent://HOST[:PORT]/NODE/VMID/path', form, example);
  const port = m[2] ? Number(m[2]) : 8006;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw bad(`port ${m[2]} is not 1-65535`, form, example);
  const node = m[3];
  if (node !== '-' && !/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$/.test(node))
    throw bad(`"${node}" is not a Proxmox node name (or - for the owning node)`, form, example);
  if (!/^\d+$/.test(m[4]) || Number(m[4]) < 100 || Number(m[4]) > 999999999)
    throw bad(`"${m[4]}" is not a VMID (100-999999999)`, form, example);
  return {
    place: { via: 'pve', host: m[1].replace(/^\[|\]$/g, ''), port, node, vmid: Number(m[4]) },
    path: guestPath(m[5] ?? '', form, example),
  };
}
