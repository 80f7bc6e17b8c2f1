/**
 * Target strings: which machine an agent runs on.
 * - `dir:/abs/path`: a directory tree (the embedded default);
 * - `btrfs:/abs/path/to/subvolume`: a btrfs subvolume;
 * - `qemu:/abs/path/to/qmp.sock`: a plain QEMU VM through its QMP unix socket;
 * - `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID`: a Proxmox VE guest (NODE `-`: found via
 *   /cluster/resources). Default port 8006.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from './errors';
import { realpathLoose } from './state';

/** A parsed target. */
export interface ParsedTarget {
  /** Backend name (the scheme): `dir` | `btrfs` | `qemu` | `proxmox`. */
  backend: string;
  /**
   * Absolute, normalised path of the target (no trailing slash, no `..`): the directory, the
   * subvolume, the QMP socket. Empty for proxmox (a remote guest has no local path).
   */
  path: string;
  /** proxmox only: where the guest is. */
  proxmox?: ProxmoxTarget;
  /** Normalised target string, e.g. `dir:/home/me/.hermes`; the journal key is derived from it. */
  spec: string;
  /** Journal key: first 16 hex chars of sha256(spec). */
  key: string;
}

/** A Proxmox VE guest as named by `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID`. */
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

const PATH_SCHEMES = ['dir', 'btrfs', 'qemu'];
const FORM = 'Write the target as dir:/abs/path, e.g. dir:/home/me/.hermes.';
const FORMS: Record<string, string> = {
  dir: FORM,
  btrfs: 'Write the target as btrfs:/abs/path/to/subvolume, e.g. btrfs:/srv/agent.',
  qemu: 'Write the target as qemu:/abs/path/to/qmp.sock (the socket of -qmp unix:PATH,server,nowait).',
  proxmox: 'Write the target as proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID, e.g. proxmox://pve.lan/pve1/qemu/101 (NODE "-" to look it up).',
};

/**
 * Parse `proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID` (the part after `proxmox:`).
 * @throws AgentKeepError BadTarget naming the wrong part.
 */
function parseProxmox(s: string, rest: string): ParsedTarget {
  const form = FORMS.proxmox;
  if (!rest.startsWith('//')) throw new AgentKeepError('BadTarget', `Proxmox target "${s}" has no host.`, form);
  const m = /^\/\/(\[[0-9A-Fa-f:.]+\]|[^/:\s]+)(?::(\d+))?(?:\/(.*))?$/s.exec(rest);
  if (!m) throw new AgentKeepError('BadTarget', `Proxmox target "${s}" does not parse.`, form);
  const host = m[1].replace(/^\[|\]$/g, '');
  const port = m[2] ? Number(m[2]) : 8006;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new AgentKeepError('BadTarget', `Port ${m[2]} in "${s}" is out of range.`, form);
  const parts = (m[3] ?? '').replace(/\/+$/, '').split('/').filter((x) => x.length > 0);
  if (parts.length !== 3) {
    throw new AgentKeepError('BadTarget', `Proxmox target "${s}" must name NODE/TYPE/VMID after the host.`, form);
  }
  const [node, typeRaw, vmidRaw] = parts;
  if (node !== '-' && !/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$/.test(node)) {
    throw new AgentKeepError('BadTarget', `"${node}" is not a Proxmox node name.`, form);
  }
  const type = typeRaw.toLowerCase();
  if (type !== 'qemu' && type !== 'lxc') {
    throw new AgentKeepError('BadTarget', `Guest type "${typeRaw}" in "${s}" must be qemu (VM) or lxc (container).`, form);
  }
  const vmid = /^\d+$/.test(vmidRaw) ? Number(vmidRaw) : NaN;
  if (!Number.isInteger(vmid) || vmid < 100 || vmid > 999_999_999) {
    throw new AgentKeepError('BadTarget', `"${vmidRaw}" is not a Proxmox VMID (100 to 999999999).`, form);
  }
  const hostPart = host.includes(':') ? `[${host}]` : host.toLowerCase();
  const norm = `proxmox://${hostPart}${port === 8006 ? '' : `:${port}`}/${node}/${type}/${vmid}`;
  // The key ignores the node: a guest that migrates, or is named with "-", keeps its journal.
  const keySpec = `proxmox://${hostPart}:${port}/${type}/${vmid}`;
  return { backend: 'proxmox', path: '', spec: norm, key: targetKey(keySpec), proxmox: { host: hostPart.replace(/^\[|\]$/g, ''), port, node, type, vmid } };
}

/** The journal key of a normalised target string (sha256, 16 hex chars). */
export function targetKey(spec: string): string {
  return createHash('sha256').update(spec, 'utf8').digest('hex').slice(0, 16);
}

/**
 * Parse a target string (no I/O).
 * @param spec e.g. `dir:/home/me/.hermes` (the URL forms `dir:///abs` and `dir://localhost/abs` are accepted too)
 * @throws AgentKeepError BadTarget for an empty or relative path, a missing scheme, or an unknown or
 *   not-yet-supported scheme, or a host (`dir://host/x`); the hint shows the correct form.
 */
export function parseTarget(spec: string): ParsedTarget {
  const s = typeof spec === 'string' ? spec.trim() : '';
  if (!s) throw new AgentKeepError('BadTarget', 'The target is empty.', FORM);
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s.exec(s);
  if (!m) {
    const hint = path.isAbsolute(s) ? `Use dir:${path.resolve(s)}.` : FORM;
    throw new AgentKeepError('BadTarget', `Target "${s}" has no scheme.`, hint);
  }
  const scheme = m[1].toLowerCase();
  let rest = m[2];
  if (scheme === 'proxmox') return parseProxmox(s, rest);
  if (!PATH_SCHEMES.includes(scheme)) {
    throw new AgentKeepError('BadTarget', `Unknown target scheme "${scheme}:" in "${s}".`, `Use dir:, btrfs:, qemu: or proxmox://. ${FORM}`);
  }
  const form = FORMS[scheme];
  if (rest.startsWith('//')) {
    // URL form: dir:///abs (empty host) or dir://localhost/abs; any other host is a mistake.
    const slash = rest.indexOf('/', 2);
    const host = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    const tail = slash < 0 ? '' : rest.slice(slash);
    if (host && host.toLowerCase() !== 'localhost') {
      const guess = `/${rest.slice(2)}`.replace(/\/+$/, '') || '/';
      throw new AgentKeepError('BadTarget', `${scheme}: takes a local path, not a host ("${host}" in "${s}").`, `Use ${scheme}:${guess} (one slash), or ${scheme}:///abs/path.`);
    }
    rest = tail;
  }
  if (!rest) throw new AgentKeepError('BadTarget', `Target "${s}" has an empty path.`, form);
  if (rest.startsWith('~')) {
    throw new AgentKeepError('BadTarget', `Target path "${rest}" uses "~", which is not expanded.`, `Write the absolute path, e.g. ${scheme}:${path.join('/home/me', rest.slice(1))}.`);
  }
  if (!path.isAbsolute(rest)) {
    throw new AgentKeepError('BadTarget', `Target path "${rest}" is relative.`, `Use an absolute path: ${scheme}:${path.resolve(rest)}.`);
  }
  let p = path.resolve(rest);
  if (p.length > 1 && p.endsWith(path.sep)) p = p.slice(0, -1);
  const norm = `${scheme}:${p}`;
  return { backend: scheme, path: p, spec: norm, key: targetKey(norm) };
}

/**
 * Parse a target string and key it by the real path of its directory: two spellings of the same
 * directory (a symlinked path, a bind of the same path through a symlinked parent) share one journal,
 * one lock and one set of snapshots. `spec` and `path` stay as the user wrote them (for display and
 * for the operations); only `key` comes from the realpath. A path that does not exist yet is keyed by
 * the realpath of its nearest existing ancestor joined with the rest.
 * @throws AgentKeepError BadTarget as parseTarget.
 */
export async function resolveTarget(spec: string): Promise<ParsedTarget> {
  const t = parseTarget(spec);
  if (!t.path) return t;
  const real = await realpathLoose(t.path);
  return real === t.path ? t : { ...t, key: targetKey(`${t.backend}:${real}`) };
}

/**
 * Check that the target exists and is a directory.
 * @throws AgentKeepError TargetNotFound naming the path and how to fix it.
 */
export async function checkTargetExists(t: ParsedTarget): Promise<void> {
  let st: import('node:fs').Stats;
  try {
    st = await fs.stat(t.path);
  } catch {
    throw new AgentKeepError('TargetNotFound', `Target directory ${t.path} does not exist.`, `Create it or pick an existing directory: dir:/abs/path.`);
  }
  if (!st.isDirectory()) {
    throw new AgentKeepError('TargetNotFound', `Target ${t.path} is not a directory.`, 'A dir: target must name a directory, e.g. dir:/home/me/.hermes.');
  }
}
