/**
 * Memory stores: parse a store name (`<kind>:/abs/path`) and return its adapter.
 * Kinds now: `hermes`. Recognised but not supported yet: `agent-zero`, `mem0`.
 */
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';
import { HermesStore } from './hermes';
import type { MemoryStoreAdapter } from './types';

export type { MemoryStoreAdapter } from './types';
export { HermesStore } from './hermes';

const KNOWN_LATER = ['agent-zero', 'mem0', 'letta', 'zep', 'graphiti'];

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
