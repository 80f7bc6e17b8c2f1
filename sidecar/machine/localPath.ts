/**
 * Parsing shared by the backends whose targets name a local path (`dir:`, `btrfs:`, `qemu:`): the
 * path forms `<scheme>:/abs/path`, `<scheme>:///abs/path` and `<scheme>://localhost/abs/path`.
 */
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';

/**
 * The absolute, normalised path (no trailing slash, no `..`) of `<scheme>:<rest>` (no I/O).
 * @param scheme the target scheme, e.g. "dir"
 * @param rest the part after `<scheme>:`
 * @param spec the whole target string as given, for messages
 * @param formHint the backend's "Write the target as …" sentence, the hint of an empty path
 * @throws AgentKeepError BadTarget for a host (`dir://host/x`), an empty, `~` or relative path; the
 *   hint shows the corrected target where it can guess it.
 */
export function parseLocalPath(scheme: string, rest: string, spec: string, formHint: string): string {
  let r = rest;
  if (r.startsWith('//')) {
    // URL form: dir:///abs (empty host) or dir://localhost/abs; any other host is a mistake.
    const slash = r.indexOf('/', 2);
    const host = slash < 0 ? r.slice(2) : r.slice(2, slash);
    const tail = slash < 0 ? '' : r.slice(slash);
    if (host && host.toLowerCase() !== 'localhost') {
      const guess = `/${r.slice(2)}`.replace(/\/+$/, '') || '/';
      throw new AgentKeepError(
        'BadTarget',
        `${scheme}: takes a local path, not a host ("${host}" in "${spec}").`,
        `Use ${scheme}:${guess} (one slash), or ${scheme}:///abs/path.`,
      );
    }
    r = tail;
  }
  if (!r) throw new AgentKeepError('BadTarget', `Target "${spec}" has an empty path.`, formHint);
  if (r.startsWith('~')) {
    throw new AgentKeepError(
      'BadTarget',
      `Target path "${r}" uses "~", which is not expanded.`,
      `Write the absolute path, e.g. ${scheme}:${path.join('/home/me', r.slice(1))}.`,
    );
  }
  if (!path.isAbsolute(r)) {
    const fix = `Use an absolute path: ${scheme}:${path.resolve(r)}.`;
    throw new AgentKeepError('BadTarget', `Target path "${r}" is relative.`, fix);
  }
  let p = path.resolve(r);
  if (p.length > 1 && p.endsWith(path.sep)) p = p.slice(0, -1);
  return p;
}

/** Options of a target that names a local path: the path itself (also ParsedTarget.path). */
export interface LocalPathOptions {
  /** Absolute, normalised path. */
  path: string;
}

/**
 * `parse` of a local-path backend: `<scheme>:<abs path>` normalised, keyed by it, `path` set (the core
 * keys it by its realpath). @throws AgentKeepError BadTarget as parseLocalPath
 */
export function parseLocalPathTarget(
  scheme: string,
  rest: string,
  spec: string,
  formHint: string,
): { spec: string; path: string; options: LocalPathOptions } {
  const p = parseLocalPath(scheme, rest, spec, formHint);
  return { spec: `${scheme}:${p}`, path: p, options: { path: p } };
}
