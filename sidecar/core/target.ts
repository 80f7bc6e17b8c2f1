/**
 * Target strings: which machine an agent runs on, `<scheme>:<rest>`. The scheme picks the machine
 * backend from the registry (sidecar/machine/index.ts); the backend's factory parses the rest (its
 * forms, typed options, normalised spelling, journal key source) and describes the target
 * (capabilities, local root). This module only splits off the scheme, dispatches, hashes the journal
 * key, and keys a target that names a local path by that path's realpath.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type { ResultOf, TargetDescription } from '../protocol';
import { backendFactory, backends, defaultBackend } from '../machine';
import type { BackendFactory } from '../machine';
import { AgentKeepError } from './errors';
import { realpathLoose } from './state';

/** A parsed target. `O`: the backend's own options (what its factory's `parse` returned). */
export interface ParsedTarget<O = unknown> {
  /** Backend name (the scheme, lower case), e.g. `dir`. */
  backend: string;
  /**
   * Absolute, normalised local path the target names (no trailing slash, no `..`): the directory,
   * the subvolume, the QMP socket. Empty when it names none (a remote guest).
   */
  path: string;
  /** Normalised target string, e.g. `dir:/home/me/.hermes`; the journal key is derived from it. */
  spec: string;
  /** Journal key: first 16 hex chars of sha256 of the backend's key spelling (default: spec). */
  key: string;
  /** The backend's typed view of the target (e.g. Proxmox host, node, type, vmid). */
  options: O;
}

/** The journal key of a normalised target string (sha256, 16 hex chars). */
export function targetKey(spec: string): string {
  return createHash('sha256').update(spec, 'utf8').digest('hex').slice(0, 16);
}

/** "a, b or c". */
function orList(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/** The scheme (lower case) and the rest of a target string, or undefined when it has no scheme. */
export function splitScheme(spec: string): { scheme: string; rest: string } | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s.exec(spec);
  return m ? { scheme: m[1].toLowerCase(), rest: m[2] } : undefined;
}

/**
 * Parse a target string (no I/O): split off the scheme, let the registered backend parse the rest.
 * @param spec e.g. `dir:/home/me/.hermes` (the URL forms `dir:///abs` and `dir://localhost/abs` are accepted too)
 * @throws AgentKeepError BadTarget for an empty target, a missing or unknown scheme (the hint lists
 *   the registered ones), or whatever the backend's parse refuses; the hint shows the correct form.
 */
export function parseTarget(spec: string): ParsedTarget {
  const s = typeof spec === 'string' ? spec.trim() : '';
  const dflt = defaultBackend();
  if (!s) throw new AgentKeepError('BadTarget', 'The target is empty.', dflt.formHint);
  const split = splitScheme(s);
  if (!split) {
    const hint = path.isAbsolute(s) ? `Use ${dflt.scheme}:${path.resolve(s)}.` : dflt.formHint;
    throw new AgentKeepError('BadTarget', `Target "${s}" has no scheme.`, hint);
  }
  const f = backendFactory(split.scheme);
  if (!f) {
    throw new AgentKeepError(
      'BadTarget',
      `Unknown target scheme "${split.scheme}:" in "${s}".`,
      `Use ${orList(backends().map((b) => b.prefix))}. ${dflt.formHint}`,
    );
  }
  const r = f.parse(split.rest, s);
  const key = targetKey(r.keySpec ?? r.spec);
  return { backend: f.scheme, path: r.path ?? '', spec: r.spec, key, options: r.options };
}

/** The forms of every registered backend's target strings, default first (for help texts). */
export function targetForms(): string[] {
  return backends().flatMap((b) => b.forms);
}

/**
 * The target of the default backend (the first registered: dir) for a local directory: what a bare
 * folder means where a command needs a target and has only a path (memory diff of one local store).
 * @param dir absolute path @throws AgentKeepError BadTarget as parseTarget (a relative path)
 */
export function defaultTargetFor(dir: string): string {
  return parseTarget(`${defaultBackend().scheme}:${dir}`).spec;
}

/**
 * Parse a target string and key it by the real path of the local path it names: two spellings of
 * the same directory (a symlinked path, a bind of the same path through a symlinked parent) share one
 * journal, one lock and one set of snapshots. `spec` and `path` stay as the user wrote them (for
 * display and for the operations); only `key` comes from the realpath. A path that does not exist
 * yet is keyed by the realpath of its nearest existing ancestor joined with the rest.
 * @throws AgentKeepError BadTarget as parseTarget.
 */
export async function resolveTarget(spec: string): Promise<ParsedTarget> {
  const t = parseTarget(spec);
  if (!t.path) return t;
  const real = await realpathLoose(t.path);
  return real === t.path ? t : { ...t, key: targetKey(`${t.backend}:${real}`) };
}

/** The factory of a parsed target. @throws AgentKeepError BadTarget when its scheme is not registered. */
function factoryOf(t: ParsedTarget): BackendFactory {
  const f = backendFactory(t.backend);
  if (!f) {
    throw new AgentKeepError(
      'BadTarget',
      `No machine backend for "${t.backend}:" targets.`,
      `Use ${defaultBackend().forms[0]}.`,
    );
  }
  return f;
}

/** What a parsed target is and can do, from its backend (target.describe; no I/O). */
export function describeParsedTarget(t: ParsedTarget): TargetDescription {
  return factoryOf(t).describe(t);
}

/**
 * What a target is and can do (target.describe): capabilities, local root, display name, guest.
 * No I/O: works for an unreachable target. @throws AgentKeepError BadTarget as parseTarget
 */
export function describeTarget(spec: string): TargetDescription {
  return describeParsedTarget(parseTarget(spec));
}

/**
 * Agents on the host a target names (agent.discover), from the backend that can list them.
 * @param spec a host target such as `proxmox://HOST[:PORT]` (a guest target of the host works too)
 * @param tag only agents carrying this tag ("" = every one)
 * @throws AgentKeepError Unsupported when no registered backend discovers agents for this scheme;
 *   BadTarget, AuthFailed, Hypervisor from the backend.
 */
export async function discoverAgents(spec: string, tag: string): Promise<ResultOf<'agentDiscover'>> {
  const s = typeof spec === 'string' ? spec.trim() : '';
  const f = backendFactory(splitScheme(s)?.scheme ?? '');
  if (!f?.discover) {
    const able = backends().filter((b) => b.discover);
    throw new AgentKeepError(
      'Unsupported',
      `Agent discovery needs a ${orList(able.map((b) => b.prefix))} target.`,
      `Give ${orList(able.map((b) => b.discover!.form))}.`,
    );
  }
  return f.discover.run(s, tag);
}
