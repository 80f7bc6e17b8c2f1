/**
 * Proxmox target strings, `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID` (NODE `-`: found via
 * /cluster/resources; default port 8006), and what such a target can do.
 */
import { AgentKeepError } from '../../core/errors';
import type { ParsedTarget } from '../../core/target';
import type { TargetDescription } from '../../protocol';
import type { BackendFactory, TargetParse } from '../types';

/** A Proxmox VE guest as named by `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID` (the parsed options). */
export interface ProxmoxTarget {
  /** Host name or IP (IPv6 without brackets). */
  host: string;
  /** API port (default 8006). */
  port: number;
  /** Node name, or `-` for "find it via /cluster/resources". */
  node: string;
  /** Guest type: `qemu` (VM) or `lxc` (container). */
  type: 'qemu' | 'lxc';
  /** Guest id (100 ..= 999999999). */
  vmid: number;
}

/** The hint of every Proxmox target parse error. */
export const PROXMOX_FORM =
  'Write the target as proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID, ' +
  'e.g. proxmox://pve.lan/pve1/qemu/101 (NODE "-" to look it up).';

/** agent/file-write `content` maxLength (qemu-server Agent.pm). */
export const GUEST_WRITE_MAX = 61440;

/**
 * Parse `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID` (`rest`: the part after `proxmox:`). The journal key
 * ignores the node: a guest that migrates, or is named with "-", keeps its journal.
 * @throws AgentKeepError BadTarget naming the wrong part.
 */
export function parseProxmoxTarget(rest: string, s: string): TargetParse<ProxmoxTarget> {
  const form = PROXMOX_FORM;
  if (!rest.startsWith('//')) throw new AgentKeepError('BadTarget', `Proxmox target "${s}" has no host.`, form);
  const m = /^\/\/(\[[0-9A-Fa-f:.]+\]|[^/:\s]+)(?::(\d+))?(?:\/(.*))?$/s.exec(rest);
  if (!m) throw new AgentKeepError('BadTarget', `Proxmox target "${s}" does not parse.`, form);
  const host = m[1].replace(/^\[|\]$/g, '');
  const port = m[2] ? Number(m[2]) : 8006;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AgentKeepError('BadTarget', `Port ${m[2]} in "${s}" is out of range.`, form);
  }
  const parts = (m[3] ?? '')
    .replace(/\/+$/, '')
    .split('/')
    .filter((x) => x.length > 0);
  if (parts.length !== 3) {
    throw new AgentKeepError('BadTarget', `Proxmox target "${s}" must name NODE/TYPE/VMID after the host.`, form);
  }
  const [node, typeRaw, vmidRaw] = parts;
  if (node !== '-' && !/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$/.test(node)) {
    throw new AgentKeepError('BadTarget', `"${node}" is not a Proxmox node name.`, form);
  }
  const type = typeRaw.toLowerCase();
  if (type !== 'qemu' && type !== 'lxc') {
    const msg = `Guest type "${typeRaw}" in "${s}" must be qemu (VM) or lxc (container).`;
    throw new AgentKeepError('BadTarget', msg, form);
  }
  const vmid = /^\d+$/.test(vmidRaw) ? Number(vmidRaw) : NaN;
  if (!Number.isInteger(vmid) || vmid < 100 || vmid > 999_999_999) {
    throw new AgentKeepError('BadTarget', `"${vmidRaw}" is not a Proxmox VMID (100 to 999999999).`, form);
  }
  const hostPart = host.includes(':') ? `[${host}]` : host.toLowerCase();
  return {
    spec: `proxmox://${hostPart}${port === 8006 ? '' : `:${port}`}/${node}/${type}/${vmid}`,
    keySpec: `proxmox://${hostPart}:${port}/${type}/${vmid}`,
    options: { host: hostPart.replace(/^\[|\]$/g, ''), port, node, type, vmid },
  };
}

/** Whether a parsed target is a proxmox:// one (its options are a ProxmoxTarget). */
export function isProxmoxTarget(t: ParsedTarget): t is ParsedTarget<ProxmoxTarget> {
  return t.backend === 'proxmox';
}

/** What a Proxmox guest target can do: VMs (qemu) have optional RAM state and guest-agent file access. */
export function describeProxmoxTarget(t: ParsedTarget<ProxmoxTarget>): TargetDescription {
  const g = t.options;
  const vm = g.type === 'qemu';
  return {
    target: t.spec,
    backend: 'proxmox',
    name: `${vm ? 'VM' : 'container'} ${g.vmid}`,
    kind: vm ? 'vm' : 'container',
    snapshotNoun: 'snapshot',
    capabilities: {
      ramState: vm,
      ramStateOnRequest: vm,
      diff: false,
      compare: false,
      readFile: false,
      relabel: true,
      guestAccess: vm,
      ...(vm ? { guestWriteMaxBytes: GUEST_WRITE_MAX } : {}),
      discover: true,
      startAfterRollback: true,
      rollbackStopsGuest: true,
      speedClass: 'fast',
      canRunWhileRunning: true,
    },
    guest: { host: g.host, port: g.port, node: g.node, type: g.type, vmid: g.vmid },
  };
}

/**
 * What the `proxmox` backend family is without its backend (no I/O, no proxmox-api): scheme, forms,
 * parse and describe. ./index.ts adds create and discover; the slim create's stand-in
 * (../../slimStub.ts) adds ones that throw.
 */
export const PROXMOX_FAMILY: Omit<BackendFactory<ProxmoxTarget>, 'create'> = {
  scheme: 'proxmox',
  prefix: 'proxmox://',
  forms: ['proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID'],
  example: 'proxmox://pve.lan/pve1/qemu/101',
  formHint: PROXMOX_FORM,
  parse: parseProxmoxTarget,
  describe: describeProxmoxTarget,
};
