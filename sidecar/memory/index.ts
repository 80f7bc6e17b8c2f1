/**
 * Memory stores: parse a store name (`<kind>:/abs/path`) and return its adapter.
 * Kinds now: `hermes`, `agent-zero` (options `?url=`), `mem0` (options `?qdrant=`, `&collection=`).
 * Options follow the path after `?` as URL query parameters (values URL-encoded).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';
import { HermesStore } from './hermes';
import { AgentZeroStore } from './agent-zero';
import { Mem0Store } from './mem0';
import type { MemoryStoreAdapter } from './types';

export type { MemoryStoreAdapter } from './types';
export { HermesStore } from './hermes';
export { AgentZeroStore } from './agent-zero';
export { Mem0Store } from './mem0';

const KNOWN_LATER = ['letta', 'zep', 'graphiti'];
const OTHER_KINDS = ['agent-zero', 'mem0'];

/**
 * Parse `spec` and return the store adapter (no I/O; call `check()` to verify the store exists).
 * @param spec `hermes:/abs/path/to/.hermes`
 * @throws AgentKeepError BadStore for a missing kind, an unknown or not-yet-supported kind, or a path
 *   that is not absolute.
 */
export function openStore(spec: string): MemoryStoreAdapter {
  const m = /^([A-Za-z][A-Za-z0-9_-]*):(.*)$/s.exec(spec ?? '');
  if (!m) {
    throw new AgentKeepError('BadStore', `Bad store "${spec}": expected <kind>:/abs/path.`, 'Use hermes:/abs/path/to/.hermes.');
  }
  const kind = m[1].toLowerCase();
  let p = m[2];
  if (OTHER_KINDS.includes(kind)) return openOtherStore(kind, p, spec);
  if (kind !== 'hermes') {
    if (KNOWN_LATER.includes(kind)) {
      throw new AgentKeepError('BadStore', `Store kind "${kind}" is not supported yet.`, 'Use a Hermes home for now: hermes:/abs/path/to/.hermes.');
    }
    throw new AgentKeepError('BadStore', `Unknown store kind "${kind}" in "${spec}".`, 'Use hermes:/abs/path/to/.hermes.');
  }
  if (p.startsWith('//')) p = p.slice(2); // tolerate hermes:///abs/path
  if (!p || !path.isAbsolute(p)) {
    throw new AgentKeepError('BadStore', `Store path "${p}" in "${spec}" is not absolute.`, 'Use hermes:/abs/path/to/.hermes (an absolute path).');
  }
  return new HermesStore(path.resolve(p), spec);
}

/**
 * `agent-zero:/abs/root[?url=http://host:port]` and `mem0:/abs/dir[?qdrant=/abs/path][&collection=name]`.
 * @throws AgentKeepError BadStore for a relative path, an unknown option or a relative qdrant path.
 */
function openOtherStore(kind: string, rest: string, spec: string): MemoryStoreAdapter {
  const q = rest.indexOf('?');
  let p = q >= 0 ? rest.slice(0, q) : rest;
  const params = new URLSearchParams(q >= 0 ? rest.slice(q + 1) : '');
  if (p.startsWith('//')) p = p.slice(2);
  const example = kind === 'agent-zero' ? 'agent-zero:/abs/root?url=http://127.0.0.1:50001' : 'mem0:/home/me/.mem0?qdrant=/home/me/.mem0/qdrant';
  if (!p || !path.isAbsolute(p)) {
    throw new AgentKeepError('BadStore', `Store path "${p}" in "${spec}" is not absolute.`, `Use an absolute path, e.g. ${example}.`);
  }
  const allowed = kind === 'agent-zero' ? ['url'] : ['qdrant', 'collection'];
  for (const k of params.keys()) {
    if (!allowed.includes(k)) throw new AgentKeepError('BadStore', `Unknown option "${k}" in store "${spec}".`, `${kind} stores take ${allowed.map((a) => `?${a}=`).join(', ')}, e.g. ${example}.`);
  }
  if (kind === 'agent-zero') return new AgentZeroStore(path.resolve(p), spec, { url: params.get('url') || undefined });
  const qdrant = params.get('qdrant') || undefined;
  if (qdrant && !path.isAbsolute(qdrant)) throw new AgentKeepError('BadStore', `Qdrant path "${qdrant}" in "${spec}" is not absolute.`, `Use e.g. ${example}.`);
  return new Mem0Store(path.resolve(p), spec, { qdrant: qdrant && path.resolve(qdrant), collection: params.get('collection') || undefined });
}

/**
 * The real path of a store root (symlinks resolved; the path as given when it does not exist), the
 * identity of a store together with its kind.
 */
export function storeIdentity(s: MemoryStoreAdapter): string {
  let real = s.root;
  try {
    real = fs.realpathSync(s.root);
  } catch {
    /* missing: check() will say so */
  }
  return `${s.kind}\0${real}`;
}

/**
 * Open each store name, dropping later names of a store already named (same kind and real path of
 * the root: `hermes:/h` and `hermes:/h/`, or a symlink to /h). The first spelling is kept, so the
 * same memory is not listed or linted twice.
 * @throws BadStore as openStore
 */
export function openStores(specs: readonly string[]): MemoryStoreAdapter[] {
  const seen = new Set<string>();
  const out: MemoryStoreAdapter[] = [];
  for (const spec of specs) {
    const s = openStore(spec);
    const id = storeIdentity(s);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(s);
  }
  return out;
}

/** The store names of `specs` without the later names of the same store (see openStores). */
export function uniqueStoreSpecs(specs: readonly string[]): string[] {
  return openStores(specs).map((s) => s.spec);
}
