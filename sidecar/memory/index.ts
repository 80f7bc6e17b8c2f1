/**
 * Registry of memory store kinds. A store is named `<kind>:<rest>`; the kind's StoreFactory parses
 * the rest (its own forms and options), creates the adapter, describes it and finds its stores in a
 * target. A new kind is one folder (sidecar/memory/<kind>/ with its factory) plus one registration
 * line below, or a plugin module (sidecar/plugins.ts, AGENTKEEP_PLUGINS). The core, the lint and the
 * front ends never branch on a kind: they use the adapter and its description.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StoreCapabilities, StoreDescription } from '../protocol';
import { AgentKeepError } from '../core/errors';
import { hermesStore } from './hermes/factory';
import { agentZeroStore } from './agent-zero/factory';
import { mem0Store } from './mem0/factory';
import { GUEST_AGENT_FORMS } from './transport/guestLocation';
import { SSH_STORE_FORM } from './transport/location';
import type { MemoryStoreAdapter, StoreFactory } from './types';

export type * from './types';
export { HermesStore } from './hermes';
export { AgentZeroStore } from './agent-zero';
export { Mem0Store } from './mem0';
export { brokenSummary, storeProblems } from './broken';
export { probeGuestStores, storeVia } from './reach';

const registry = new Map<string, StoreFactory>();

/**
 * Register a store kind under its name (lower case). The first one registered is the default: its
 * form is the hint for a store string without a kind. Registering a kind again replaces it.
 */
export function registerStore<O>(f: StoreFactory<O>): void {
  registry.set(f.kind.toLowerCase(), f as StoreFactory);
}

// ---- registrations (one line per store kind; the first is the default) ----
registerStore(hermesStore);
registerStore(agentZeroStore);
registerStore(mem0Store);

/** Kinds we know of but do not read yet (their stores are reached through vendor APIs). */
const KNOWN_LATER = ['letta', 'zep', 'graphiti'];

/** All registered store kinds, in registration order. */
export function storeFactories(): StoreFactory[] {
  return [...registry.values()];
}

/**
 * The store strings the registered kinds take, for the --store help of the CLI (memory *, agent add,
 * agent status: one text everywhere): each kind's local form, then the places on another machine and
 * in a VM the kinds that parse them take (all of the built-in ones), e.g. "hermes:/abs/path/to/.hermes,
 * agent-zero:/abs/root, mem0:/abs/dir; on another machine <kind>:ssh://user@host[:port]/abs/path; in a
 * VM <kind>:qga:/abs/qga.sock:/abs/path or <kind>:pve-agent://HOST[:PORT]/NODE/VMID/abs/path".
 */
export function storeFormsHelp(): string {
  const all = storeFactories();
  const remote = all.filter((f) => f.forms.some((x) => x.startsWith(`${f.kind}:ssh://`)));
  const local = all.map((f) => f.forms[0]).join(', ');
  if (!remote.length) return local;
  const [qga, pve] = GUEST_AGENT_FORMS.map((x) => `<kind>:${x}`);
  const kinds = remote.length === all.length ? '' : ` (<kind>: ${remote.map((f) => f.kind).join(', ')})`;
  return `${local}; on another machine <kind>:${SSH_STORE_FORM}; in a VM ${qga} or ${pve}${kinds}`;
}

/** The factory of `kind` (case-insensitive), or undefined. */
export function storeFactory(kind: string): StoreFactory | undefined {
  return registry.get(kind.toLowerCase());
}

/** "Use hermes:/abs/path/to/.hermes." (the default kind's form). */
function defaultHint(): string {
  const [first] = registry.values();
  return first ? `Use ${first.forms[0]}.` : 'Register a store kind in sidecar/memory/index.ts.';
}

/** "Registered kinds: hermes (hermes:/abs/path/to/.hermes), agent-zero (...)." */
function kindsHint(): string {
  return `Registered kinds: ${storeFactories()
    .map((f) => `${f.kind} (${f.forms[0]})`)
    .join(', ')}.`;
}

/**
 * Parse `spec` and return the store adapter (no I/O; call `check()` to verify the store exists).
 * @param spec `<kind>:<rest>`, e.g. `hermes:/abs/path/to/.hermes`
 * @throws AgentKeepError BadStore for a missing kind, an unknown or not-yet-supported kind (the hint
 *   lists the registered kinds), or whatever the kind's parse refuses (e.g. a path that is not absolute).
 */
export function openStore(spec: string): MemoryStoreAdapter {
  const m = /^([A-Za-z][A-Za-z0-9_-]*):(.*)$/s.exec(spec ?? '');
  if (!m) {
    throw new AgentKeepError('BadStore', `Bad store "${spec}": expected <kind>:/abs/path.`, defaultHint());
  }
  const kind = m[1].toLowerCase();
  const f = registry.get(kind);
  if (!f) {
    if (KNOWN_LATER.includes(kind)) {
      throw new AgentKeepError('BadStore', `Store kind "${kind}" is not supported yet.`, kindsHint());
    }
    throw new AgentKeepError('BadStore', `Unknown store kind "${kind}" in "${spec}".`, kindsHint());
  }
  return f.create({ kind: f.kind, spec, options: f.parse(m[2], spec) });
}

/** Capabilities of an adapter, from what it implements (see StoreCapabilities in the protocol). */
export function storeCapabilities(s: MemoryStoreAdapter): StoreCapabilities {
  return {
    edit: typeof s.edit === 'function' && typeof s.remove === 'function' && typeof s.add === 'function',
    provenance: typeof s.provenance === 'function',
    budgets: !!s.lintProfile?.budgets,
    drift: typeof s.lintProfile?.driftText === 'function',
    diff: typeof s.listCapture === 'function',
    actions: typeof s.actionsSince === 'function',
    lock: typeof s.lockAgentState === 'function',
    textFiles: !!s.textFiles && !!s.localRoot,
  };
}

/** The last two parts of a path ("agent-home/.hermes"). */
function lastTwo(p: string): string {
  return (
    p
      .replace(/[\\/]+$/, '')
      .split(/[\\/]/)
      .slice(-2)
      .join('/') || p
  );
}

/**
 * "root/.hermes on root@10.0.0.5" for a store at ssh://user@host:port/path (port 22 left out),
 * "root/.hermes in VM 101 on pve.lan" at pve-agent://host:port/node/vmid/path, "root/.hermes in the
 * VM of /run/vm/qga.sock" at qga:/run/vm/qga.sock:/path; else undefined.
 */
function remoteName(location: string): string | undefined {
  const m = /^ssh:\/\/([^/]+)(\/.*)$/.exec(location);
  if (m) return `${lastTwo(decodeURIComponent(m[2]))} on ${decodeURIComponent(m[1]).replace(/:22$/, '')}`;
  const pve = /^pve-agent:\/\/(.+?)(?::\d+)?\/[^/]+\/(\d+)(\/.*)$/.exec(location);
  if (pve) return `${lastTwo(decodeURIComponent(pve[3]))} in VM ${pve[2]} on ${pve[1]}`;
  const qga = /^qga:(\/[^:]*):(\/.*)$/.exec(location);
  if (qga) return `${lastTwo(decodeURIComponent(qga[2]))} in the VM of ${qga[1]}`;
  return undefined;
}

/** What an adapter is and can do (store.describe; no I/O). */
export function describeAdapter(s: MemoryStoreAdapter): StoreDescription {
  const f = registry.get(s.kind.toLowerCase());
  return {
    store: s.spec,
    kind: s.kind,
    kindName: f?.kindName ?? s.kind,
    name: f?.displayName?.(s) ?? (s.localRoot ? lastTwo(s.localRoot) : (remoteName(s.location) ?? s.location)),
    location: s.location,
    ...(s.localRoot ? { localRoot: s.localRoot } : {}),
    capabilities: storeCapabilities(s),
  };
}

/** What a store string names and can do (store.describe; no I/O). @throws BadStore as openStore */
export function describeStore(spec: string): StoreDescription {
  return describeAdapter(openStore(spec));
}

/**
 * The identity of a store: its kind and the real path of its local root (symlinks resolved; the
 * path as given when it does not exist), or its location when it has no local root.
 */
export function storeIdentity(s: MemoryStoreAdapter): string {
  let real = s.localRoot ?? s.location;
  if (s.localRoot) {
    try {
      real = fs.realpathSync(s.localRoot);
    } catch {
      /* missing: check() will say so */
    }
  }
  return `${s.kind}\0${real}`;
}

/** Whether store string `a` names the store `s` (same string, or same kind and location). */
export function sameStore(a: string, s: MemoryStoreAdapter): boolean {
  if (a === s.spec) return true;
  try {
    const o = openStore(a);
    return o.kind === s.kind && o.location === s.location;
  } catch {
    return false;
  }
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

/**
 * Stores found in a target's local root (a directory tree the sidecar reads directly: dir and btrfs
 * targets), asking every registered kind's detect in registration order; a store found twice (same
 * identity) is listed once. None for a target without a local root (VM targets: `localRoot` empty).
 * A kind whose detect fails finds nothing (detection never stops a create).
 */
export async function detectStores(localRoot: string | undefined): Promise<MemoryStoreAdapter[]> {
  if (!localRoot || !path.isAbsolute(localRoot)) return [];
  if (
    !(await fs.promises.stat(localRoot).then(
      (st) => st.isDirectory(),
      () => false,
    ))
  )
    return [];
  // every kind looks at the same time (each a few stats); the specs stay in registry order
  const found = await Promise.all(
    [...registry.values()].map((f) => (f.detect ? f.detect(localRoot).catch(() => [] as string[]) : [])),
  );
  return openStores(found.flat());
}
