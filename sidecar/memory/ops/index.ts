/**
 * Memory operations behind memory.show/edit/remove/add/lint/diff (issue 4): they open the stores
 * (sidecar/memory/index.ts openStore) and dispatch to the adapters' optional capabilities
 * (sidecar/memory/types.ts); a store without a capability answers Unsupported naming the store.
 * Before every successful write the exact bytes replaced are kept under
 * `<stateDir>/memory-backups/<store key>/<UTC time>-<file>` (see backupDir), next to the `undo`
 * params each write returns.
 */
import type {
  MemoryEntry,
  MemoryFile,
  ParamsOf,
  Provenance,
  ProvenanceTrace,
  RestorePoint,
  ResultOf,
} from '../../protocol';
import { memoryListAction } from '../../core/actions';
import { AgentKeepError, asAgentKeepError } from '../../core/errors';
import { openStore, sameStore, uniqueStoreSpecs } from '../index';
import type { CaptureSource, MemoryStoreAdapter } from '../types';
import { logHookWrite, logWrite, withWriteLog } from './writelog';
import { diffEntries } from './diff';
import { backupDir, refuseReadOnly, unsupported, writeOpts, type MemoryOpsContext } from './common';

export { backupDir, writeOpts, type MemoryOpsContext } from './common';

export { memoryHistory, undoWrite, restoreEntry } from './timeline';
export { forgetMemory, lintFix } from './editset';

/**
 * The entry of store `s` whose id is `id` or starts with it (case-insensitive, like a short git hash):
 * the adapter's own `resolve` when it has one, else a scan of `s.list()`.
 * @returns the entry and the file that holds it
 * @throws AgentKeepError EntryNotFound (no entry; next action: memory list) or Conflict (more than one
 *   id starts so: up to 8 are named; give more characters)
 */
export async function resolveEntry(
  s: MemoryStoreAdapter,
  id: string,
): Promise<{ entry: MemoryEntry; file: MemoryFile }> {
  if (s.resolve) return s.resolve(id);
  const files = await s.list();
  const want = id.trim().toLowerCase();
  const hits = files.flatMap((f) =>
    f.entries.filter((e) => e.id.toLowerCase().startsWith(want)).map((entry) => ({ entry, file: f })),
  );
  if (hits.length === 1) return hits[0];
  if (!hits.length)
    throw new AgentKeepError('EntryNotFound', `No entry ${id} in ${s.spec}.`, undefined, [memoryListAction([s.spec])]);
  throw new AgentKeepError(
    'Conflict',
    `Entry id ${id} is ambiguous in ${s.spec}: ${hits
      .slice(0, 8)
      .map((h) => h.entry.id)
      .join(', ')}.`,
    'Give more characters of the id.',
  );
}

/**
 * memory.show: the entry (id or unique prefix >= 4 chars) in the first store that has it, its file
 * (without entries), the file's content hash and the entry's provenance. When the store's history
 * cannot be read (provenance.unavailable, e.g. a damaged state.db), the file gets a warning naming
 * it and the fix, and the show still succeeds.
 * @throws EntryNotFound (in none of the stores), Conflict (ambiguous id), BadStore, StoreNotFound
 */
export async function showMemory(ctx: MemoryOpsContext, p: ParamsOf<'memoryShow'>): Promise<ResultOf<'memoryShow'>> {
  const hits: Array<{ s: MemoryStoreAdapter; entry: MemoryEntry; file: MemoryFile }> = [];
  let notFound: AgentKeepError | undefined;
  for (const spec of uniqueStoreSpecs(p.stores)) {
    const s = withLog(ctx, openStore(spec));
    try {
      hits.push({ s, ...(await resolveEntry(s, p.entry)) });
    } catch (e) {
      if (e instanceof AgentKeepError && e.kind === 'EntryNotFound') notFound = e;
      else throw e;
    }
  }
  if (!hits.length) {
    if (p.stores.length === 1 && notFound) throw notFound;
    throw new AgentKeepError(
      'EntryNotFound',
      `No entry ${p.entry} in ${p.stores.join(', ')}.`,
      'Ids change when the text changes.',
      [memoryListAction(p.stores)],
    );
  }
  if (hits.length > 1) {
    throw new AgentKeepError(
      'Conflict',
      `Entry id ${p.entry} matches entries in several stores: ${hits.map((h) => `${h.entry.id} in ${h.s.spec}`).join(', ')}.`,
      'Name one store, or give more characters of the id.',
    );
  }
  const { s, entry, file } = hits[0];
  const { entries: _omit, ...fileInfo } = file;
  const none: Provenance = { traces: [], note: `The ${s.kind} store does not keep provenance.` };
  const provenance: Provenance = s.provenance ? await s.provenance(entry) : none;
  const contentHash = s.contentHash ? await s.contentHash(file.file) : '';
  // a store history that cannot be read (e.g. a damaged state.db) is a store warning, not only a note
  const u = provenance.unavailable;
  if (u) {
    const warning = `Provenance unavailable: ${u.message}${u.hint ? ` Fix: ${u.hint}` : ''}`;
    fileInfo.warnings = [...(fileInfo.warnings ?? []), warning];
  }
  return { store: s.spec, file: fileInfo, entry: { ...entry, store: entry.store ?? s.spec }, contentHash, provenance };
}

/**
 * memory.edit: replace one entry's text (see the adapter's edit for the checks). The bytes replaced
 * are backed up first; `undo` are the memory.edit params that put the old text back.
 * @throws EntryNotFound, Conflict, OverBudget, Unsupported (read-only store or file), TargetBusy
 */
export async function editMemory(ctx: MemoryOpsContext, p: ParamsOf<'memoryEdit'>): Promise<ResultOf<'memoryEdit'>> {
  const s = openStore(p.store);
  if (!s.edit) throw unsupported(s, 'edit entries');
  await refuseReadOnly(s);
  const r = await s.edit(p.entry, p.text, p.expectedHash, writeOpts(ctx, s));
  if (r.entry.text !== r.previous.text)
    await logWrite(backupDir(ctx.stateDir, s), s, 'replace', r.entry, r.previous.text).catch(() => undefined);
  return {
    entry: r.entry,
    previous: r.previous,
    contentHash: r.contentHash,
    undo: { store: p.store, entry: r.entry.id, text: r.previous.text },
  };
}

/** memory.remove: delete one entry; `undo` says what memory.add puts back. @throws as editMemory */
export async function removeMemory(
  ctx: MemoryOpsContext,
  p: ParamsOf<'memoryRemove'>,
): Promise<ResultOf<'memoryRemove'>> {
  const s = openStore(p.store);
  if (!s.remove) throw unsupported(s, 'remove entries');
  await refuseReadOnly(s);
  const r = await s.remove(p.entry, p.expectedHash, writeOpts(ctx, s));
  await logWrite(backupDir(ctx.stateDir, s), s, 'remove', r.removed).catch(() => undefined);
  return {
    removed: r.removed,
    contentHash: r.contentHash,
    undo: { store: p.store, text: r.removed.text, ...(r.file ? { file: r.file } : {}) },
  };
}

/** memory.add: add one entry (Hermes: appended to MEMORY.md or USER.md). @throws Conflict, OverBudget, Unsupported */
export async function addMemory(ctx: MemoryOpsContext, p: ParamsOf<'memoryAdd'>): Promise<ResultOf<'memoryAdd'>> {
  const s = openStore(p.store);
  if (!s.add) throw unsupported(s, 'add entries');
  await refuseReadOnly(s);
  const r = await s.add(p.text, p.file, p.expectedHash, writeOpts(ctx, s));
  if (!r.alreadyPresent) await logWrite(backupDir(ctx.stateDir, s), s, 'add', r.entry).catch(() => undefined);
  return r;
}

/** memory.lint (sidecar/memory/lint); provenance includes AgentKeep's own writes (./writelog.ts). */
export async function lintMemory(ctx: MemoryOpsContext, p: ParamsOf<'memoryLint'>): Promise<ResultOf<'memoryLint'>> {
  // required here, not imported: the lint's word tables (WordNet, the choice families) are built when
  // its modules load (~2 MB of heap), which every other command (a create, a list) does without
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runLint } = require('../lint/run') as typeof import('../lint/run');
  return runLint(
    {
      stores: uniqueStoreSpecs(p.stores),
      ...(p.target ? { target: p.target } : {}),
      ...(p.embeddings ? { embeddings: p.embeddings } : {}),
    },
    { openStore: (spec) => withLog(ctx, openStore(spec)) },
  );
}

/** The store with provenance from AgentKeep's write log of `ctx.stateDir` (./writelog.ts). */
function withLog(ctx: MemoryOpsContext, s: MemoryStoreAdapter): MemoryStoreAdapter {
  return withWriteLog(s, backupDir(ctx.stateDir, s));
}

export { diffEntries } from './diff';

/**
 * memory.diff: entries added, removed and changed between restore point `from`'s agent-state capture
 * and now (or restore point `to`), per store (default: the stores `from` captured), plus the
 * outside-world actions since `from` (until `to`) from the stores' session history. A file broken on
 * either side with its entries unknown (MemoryFile.broken) is not compared; `warnings` names it.
 * @throws FileError (a store history needed for the actions is damaged), RestorePointNotFound,
 *   BadStore (a store `from` did not capture), Unsupported (a store that
 *   cannot read captures)
 */
export async function diffMemory(ctx: MemoryOpsContext, p: ParamsOf<'memoryDiff'>): Promise<ResultOf<'memoryDiff'>> {
  if (!ctx.getRestorePoint || !ctx.readObject)
    throw new AgentKeepError('Internal', 'memory diff needs restore-point access.', 'Call it through the core.');
  const from = await ctx.getRestorePoint(p.target, p.from);
  const to = p.to && p.to !== 'now' ? await ctx.getRestorePoint(p.target, p.to) : undefined;
  const specs = uniqueStoreSpecs(p.stores?.length ? p.stores : from.agent.map((a) => a.store));
  if (!specs.length) {
    throw new AgentKeepError(
      'BadStore',
      `Restore point ${from.id} captured no memory store, so there is no memory to compare.`,
      'Pick a restore point that captured a store (the list of restore points shows their stores).',
    );
  }
  const result: ResultOf<'memoryDiff'> = { added: [], removed: [], changed: [], actions: [] };
  const actions: ProvenanceTrace[] = [];
  const warnings: string[] = [];
  for (const spec of specs) {
    const s = openStore(spec);
    if (!s.listCapture) throw unsupported(s, 'read its entries from a restore point');
    const source = (rp: RestorePoint): CaptureSource => {
      const cap = rp.agent.find((a) => a.store === spec || sameStore(a.store, s));
      if (!cap) {
        throw new AgentKeepError(
          'BadStore',
          `Restore point ${rp.id} has no capture of ${spec} (captured: ${rp.agent.map((a) => a.store).join(', ') || 'none'}).`,
          'Name a store the restore point captured, or pick another restore point.',
        );
      }
      const byPath = new Map(cap.files.map((f) => [f.path, f.hash]));
      return {
        files: [...byPath.keys()],
        read: async (rel) => {
          const h = byPath.get(rel);
          return h ? ctx.readObject!(h) : undefined;
        },
        display: (rel) => `${cap.store}:${rel}@${rp.id}`,
      };
    };
    const before = await s.listCapture(source(from));
    const after = to ? await s.listCapture(source(to)) : await s.list();
    // a broken file whose entries are unknown on one side is left out, so its entries do not show up
    // as removed (or added): said in warnings instead
    const unknown = new Set<string>();
    const sides: Array<[MemoryFile[], string]> = [
      [before, `restore point ${from.id}`],
      [after, to ? `restore point ${to.id}` : 'now'],
    ];
    for (const [files, side] of sides) {
      for (const f of files) {
        if (!f.broken || f.entries.length) continue;
        unknown.add(f.kind);
        warnings.push(`${f.file} is broken (${side}), so its entries were not compared: ${f.broken.message}`);
      }
    }
    const known = (files: MemoryFile[]): MemoryFile[] => files.filter((f) => !unknown.has(f.kind));
    const d = diffEntries(s.spec, known(before), known(after));
    result.added.push(...d.added);
    result.removed.push(...d.removed);
    result.changed.push(...d.changed);
    if (s.actionsSince) {
      // between two restore points the entries come from the captures alone: a store that cannot be
      // reached now (a VM being rolled back) still compares; only its action history is missing
      const since = s.actionsSince(from.createdAt, to?.createdAt);
      if (!to) actions.push(...(await since));
      else
        actions.push(
          ...(await since.catch((e: unknown) => {
            warnings.push(
              `${spec}: the actions between the two restore points were not read (the store cannot be read now: ${asAgentKeepError(e).oneLine()})`,
            );
            return [] as ProvenanceTrace[];
          })),
        );
    }
  }
  result.actions = actions.sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
  if (warnings.length) result.warnings = warnings;
  return result;
}

/**
 * memory.recordWrite: append what an agent hook saw of the agent's own memory tool call to the
 * store's write log (source "hook"; see ./writelog.ts). Nothing in the store is written.
 * @throws BadStore, StoreNotFound (the store must open)
 */
export async function recordWrite(
  ctx: MemoryOpsContext,
  p: ParamsOf<'memoryRecordWrite'>,
): Promise<ResultOf<'memoryRecordWrite'>> {
  const s = openStore(p.store);
  const { store, ...w } = p;
  const log = await logHookWrite(backupDir(ctx.stateDir, s), store, w);
  return { log, changed: p.before !== p.after };
}
