/**
 * Target strings: which machine an agent runs on. Now: `dir:/abs/path` (the embedded default, a
 * directory tree). Recognised but not yet supported: `btrfs:`, `qemu:`, `proxmox://`.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from './errors';
import { realpathLoose } from './state';

/** A parsed target. */
export interface ParsedTarget {
  /** Backend name (the scheme): `dir`. */
  backend: string;
  /** Absolute, normalised path of the target (no trailing slash, no `..`). */
  path: string;
  /** Normalised target string, e.g. `dir:/home/me/.hermes`; the journal key is derived from it. */
  spec: string;
  /** Journal key: first 16 hex chars of sha256(spec). */
  key: string;
}

const LATER = ['btrfs', 'qemu', 'proxmox'];
const FORM = 'Write the target as dir:/abs/path, e.g. dir:/home/me/.hermes.';

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
  if (scheme !== 'dir') {
    if (LATER.includes(scheme)) {
      throw new AgentKeepError(
        'BadTarget',
        `Target scheme "${scheme}:" is not yet supported in this version.`,
        `Use a directory target for now: ${FORM.slice(FORM.indexOf('dir:'))}`,
      );
    }
    throw new AgentKeepError('BadTarget', `Unknown target scheme "${scheme}:" in "${s}".`, FORM);
  }
  if (rest.startsWith('//')) {
    // URL form: dir:///abs (empty host) or dir://localhost/abs; any other host is a mistake.
    const slash = rest.indexOf('/', 2);
    const host = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    const tail = slash < 0 ? '' : rest.slice(slash);
    if (host && host.toLowerCase() !== 'localhost') {
      const guess = `/${rest.slice(2)}`.replace(/\/+$/, '') || '/';
      throw new AgentKeepError('BadTarget', `dir: takes a path, not a host ("${host}" in "${s}").`, `Use dir:${guess} (one slash), or dir:///abs/path.`);
    }
    rest = tail;
  }
  if (!rest) throw new AgentKeepError('BadTarget', `Target "${s}" has an empty path.`, FORM);
  if (rest.startsWith('~')) {
    throw new AgentKeepError('BadTarget', `Target path "${rest}" uses "~", which is not expanded.`, `Write the absolute path, e.g. dir:${path.join('/home/me', rest.slice(1))}.`);
  }
  if (!path.isAbsolute(rest)) {
    throw new AgentKeepError('BadTarget', `Target path "${rest}" is relative.`, `Use an absolute path: dir:${path.resolve(rest)}.`);
  }
  let p = path.resolve(rest);
  if (p.length > 1 && p.endsWith(path.sep)) p = p.slice(0, -1);
  const norm = `dir:${p}`;
  return { backend: 'dir', path: p, spec: norm, key: targetKey(norm) };
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
  const real = await realpathLoose(t.path);
  return real === t.path ? t : { ...t, key: targetKey(`dir:${real}`) };
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
