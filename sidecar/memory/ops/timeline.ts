/**
 * The memory timeline (issue 12 item 4): every write to a store, from every record that keeps one,
 * merged and oldest first (memory.history), and the writes that act on it: undo one write or one
 * group (memory.undoWrite) and bring one entry back from a restore point (memory.restoreEntry).
 *
 * Sources, as MemoryWrite.source:
 * - "agent": the agent's own memory tool calls in the store's session history (adapter.agentWrites;
 *   Hermes state.db: action, target, content, old_text, session, tool call id, time). Hermes'
 *   replace and remove name the entry by a substring (old_text): the whole text before is known when
 *   an earlier write, a hook record or a capture holds the entry that contained it.
 * - "hook": the agent hooks' records around the memory tool (writes.jsonl, source "hook": the file
 *   before and after the call). A hook record of a call state.db also has (same tool call id) is
 *   merged into that write and gives it its exact before text.
 * - "agentkeep": AgentKeep's writes (writes.jsonl without source): memory add/edit/remove, undo,
 *   restore-entry, forget, lint --fix.
 * - "restore-point": what two consecutive captures of the store in `target`'s restore points show
 *   changed, where no write above explains it (an edit by hand, a write before the history began).
 *
 * Undo acts on the entry, not on the whole file, so writes made later to other entries stay: an add
 * is undone by removing its text, a replace by replacing its text with the text before, a remove by
 * adding the text back (at the end of its file: Hermes keeps no positions). Each step is the
 * adapter's own edit/remove/add with `expectedHash` = the file's content hash as just read: a
 * compare-and-swap under the store's lock. The undo is logged (undoOf), so it is itself undoable.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type { MemoryEntry, MemoryFile, MemoryWrite, ParamsOf, RestorePoint, ResultOf } from '../../protocol';
import { AgentKeepError, asAgentKeepError } from '../../core/errors';
import { openStore, sameStore, uniqueStoreSpecs } from '../index';
import type { CaptureSource, MemoryStoreAdapter } from '../types';
import { backupDir, refuseReadOnly, unsupported, writeOpts, type MemoryOpsContext } from './common';
import { diffEntries } from './diff';
import { logWrite, readWrites, type WriteExtra, type WriteRecord } from './writelog';

/** The id a text store gives an entry (Hermes and the hook records: sha256 of the text, 12 hex chars). */
function textId(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12);
}

function norm(s: string): string {
  return s.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** Hermes' memory tool target of a file (USER.md → user), else undefined. */
function targetOf(file: string | undefined): string | undefined {
  if (!file) return undefined;
  const b = path.basename(file);
  return b === 'USER.md' ? 'user' : b === 'MEMORY.md' ? 'memory' : undefined;
}

/** The one entry text that differs between two file contents (hook records), if exactly one does. */
function changedEntry(
  s: MemoryStoreAdapter,
  before: string,
  after: string,
): { before?: string; after?: string } | undefined {
  if (!s.splitEntries) return undefined;
  const b = s.splitEntries(before);
  const a = s.splitEntries(after);
  const gone = b.filter((x) => !a.includes(x));
  const fresh = a.filter((x) => !b.includes(x));
  if (gone.length > 1 || fresh.length > 1) return undefined;
  return {
    ...(gone[0] !== undefined ? { before: gone[0] } : {}),
    ...(fresh[0] !== undefined ? { after: fresh[0] } : {}),
  };
}

/** A write-log record on the timeline. */
function fromLog(s: MemoryStoreAdapter, r: WriteRecord & { line: number }): MemoryWrite {
  const hook = r.source === 'hook';
  const exact =
    hook && r.before !== undefined && r.after !== undefined ? changedEntry(s, r.before, r.after) : undefined;
  const before = hook
    ? exact?.before
    : r.action === 'replace'
      ? r.previous
      : r.action === 'remove'
        ? r.text
        : undefined;
  const after = hook
    ? (exact?.after ?? (r.action !== 'remove' ? r.text : undefined))
    : r.action !== 'remove'
      ? r.text
      : undefined;
  return {
    id: `log:${r.line}`,
    store: s.spec,
    source: hook ? 'hook' : 'agentkeep',
    time: r.time,
    action: r.action,
    ...(r.file ? { file: r.file } : {}),
    ...(r.target || targetOf(r.file) ? { target: r.target ?? targetOf(r.file) } : {}),
    ...(after !== undefined
      ? { entry: s.splitEntries ? textId(after) : r.id }
      : before !== undefined
        ? { entry: s.splitEntries ? textId(before) : r.id }
        : {}),
    ...(before !== undefined ? { before } : {}),
    ...(after !== undefined ? { after } : {}),
    ...(hook && r.previous !== undefined ? { oldText: r.previous } : {}),
    ...(r.session ? { session: r.session } : {}),
    ...(r.toolCallId ? { toolCallId: r.toolCallId } : {}),
    ...(r.restorePoint ? { restorePoint: r.restorePoint } : {}),
    ...(r.why ? { why: r.why } : hook ? {} : { why: `memory ${r.action === 'replace' ? 'edit' : r.action}` }),
    ...(r.undoOf ? { undoOf: r.undoOf } : {}),
    ...(r.group ? { group: r.group } : {}),
  };
}

/** Which restore points captured `s`, oldest first, with a CaptureSource of each. */
async function capturesOf(
  ctx: MemoryOpsContext,
  target: string,
  s: MemoryStoreAdapter,
): Promise<Array<{ rp: RestorePoint; src: CaptureSource }>> {
  if (!ctx.listRestorePoints || !ctx.readObject) return [];
  const rps = (await ctx.listRestorePoints(target)).slice().reverse();
  const out: Array<{ rp: RestorePoint; src: CaptureSource }> = [];
  for (const rp of rps) {
    const cap = rp.agent.find((a) => a.store === s.spec || sameStore(a.store, s));
    if (!cap) continue;
    const byPath = new Map(cap.files.map((f) => [f.path, f.hash]));
    out.push({
      rp,
      src: {
        files: [...byPath.keys()],
        read: async (rel) => {
          const h = byPath.get(rel);
          return h ? ctx.readObject!(h) : undefined;
        },
        display: (rel) => `${cap.store}:${rel}@${rp.id}`,
      },
    });
  }
  return out;
}

/** The writes of one store, oldest first, and the warnings of the histories that could not be read. */
async function storeWrites(
  ctx: MemoryOpsContext,
  s: MemoryStoreAdapter,
  target: string | undefined,
  warnings: string[],
): Promise<MemoryWrite[]> {
  const log = await readWrites(backupDir(ctx.stateDir, s));
  const hooks = new Map<string, WriteRecord & { line: number }>();
  for (const r of log) if (r.source === 'hook' && r.toolCallId) hooks.set(r.toolCallId, r);
  const merged = new Set<number>();
  const out: MemoryWrite[] = [];

  // the agent's own tool calls (state.db): the whole text before a replace/remove is the entry an
  // earlier write left that contains old_text (or the hook record's exact before)
  let agent: Awaited<ReturnType<NonNullable<MemoryStoreAdapter['agentWrites']>>> = [];
  try {
    agent = s.agentWrites ? await s.agentWrites() : [];
  } catch (e) {
    const err = asAgentKeepError(e);
    warnings.push(
      `${s.spec}: the agent's own memory writes are not shown: ${err.message}${err.hint ? ` Fix: ${err.hint}` : ''}`,
    );
  }
  const known = new Map<string, string[]>(); // target → entry texts the writes so far left
  // the store as the first capture (or now) holds it seeds what old_text can be found in
  const seed: string[] = [];
  const texts = (t: string): string[] => known.get(t) ?? (known.set(t, []), known.get(t)!);
  for (const w of agent) {
    const t = w.target ?? 'memory';
    const live = texts(t);
    const hook = w.toolCallId ? hooks.get(w.toolCallId) : undefined;
    const exact =
      hook?.before !== undefined && hook.after !== undefined ? changedEntry(s, hook.before, hook.after) : undefined;
    if (hook) merged.add(hook.line);
    let before: string | undefined = exact?.before;
    if (before === undefined && w.oldText !== undefined && w.action !== 'add') {
      const needle = w.oldText;
      before = [...live].reverse().find((x) => x.includes(needle)) ?? seed.find((x) => x.includes(needle));
    }
    const after = w.action === 'remove' ? undefined : (exact?.after ?? w.content);
    if (!w.refused) {
      if (before !== undefined) {
        const i = live.indexOf(before);
        if (i >= 0) live.splice(i, 1);
      }
      if (after !== undefined) live.push(after);
    }
    const id = after ?? before;
    out.push({
      id: `db:${w.key}`,
      store: s.spec,
      source: 'agent',
      ...(w.time ? { time: w.time } : hook ? { time: hook.time } : {}),
      action: w.action,
      ...(w.file ? { file: w.file } : {}),
      target: t,
      ...(id !== undefined ? { entry: textId(id) } : {}),
      ...(before !== undefined ? { before } : {}),
      ...(after !== undefined ? { after } : {}),
      ...(w.oldText !== undefined ? { oldText: w.oldText } : {}),
      ...(w.session ? { session: w.session } : {}),
      ...(w.toolCallId ? { toolCallId: w.toolCallId } : {}),
      ...(w.refused ? { refused: true } : {}),
      ...(hook || w.messageState
        ? {
            why: [
              hook ? 'also seen by the agent hook (exact file before and after)' : '',
              w.messageState ? `its session message is ${w.messageState} (the file was written all the same)` : '',
            ]
              .filter(Boolean)
              .join('; '),
          }
        : {}),
    });
  }
  for (const r of log) if (!merged.has(r.line)) out.push(fromLog(s, r));

  // what the captures show changed where no write above explains it
  if (target && s.listCapture) {
    try {
      const caps = await capturesOf(ctx, target, s);
      // a capture's file is shown as <store>:<rel>@<rp>: the write is to the live file of its kind
      const liveFiles = caps.length > 1 ? await s.list() : [];
      let prev: { rp: RestorePoint; files: MemoryFile[] } | undefined;
      for (const c of caps) {
        const files = await s.listCapture(c.src);
        if (prev) {
          const d = diffEntries(s.spec, prev.files, files);
          const from = prev.rp.createdAt;
          const to = c.rp.createdAt;
          const explained = (text: string | undefined, side: 'after' | 'before'): boolean =>
            text !== undefined &&
            out.some(
              (w) =>
                w.source !== 'restore-point' &&
                !w.refused &&
                w[side] !== undefined &&
                norm(w[side]!) === norm(text) &&
                (!w.time || (w.time > from && w.time <= to)),
            );
          let n = 0;
          const both = [...prev.files, ...files];
          const fileOf = (shown: string | undefined): string | undefined => {
            const kind = both.find((f) => f.file === shown)?.kind;
            return liveFiles.find((f) => f.kind === kind)?.file;
          };
          const push = (action: MemoryWrite['action'], b?: MemoryEntry, a?: MemoryEntry): void => {
            if (a ? explained(a.text, 'after') : explained(b?.text, 'before')) return;
            const e = a ?? b!;
            out.push({
              id: `rp:${c.rp.id}:${n++}`,
              store: s.spec,
              source: 'restore-point',
              time: to,
              action,
              ...(fileOf(e.file) ? { file: fileOf(e.file) } : {}),
              ...(e.area ? { target: e.area } : {}),
              entry: e.id,
              ...(b ? { before: b.text } : {}),
              ...(a ? { after: a.text } : {}),
              restorePoint: c.rp.id,
              why: `changed between restore points ${prev!.rp.id} and ${c.rp.id} with no write recorded (by hand, or before the history began)`,
            });
          };
          for (const x of d.added) push('add', undefined, x.after);
          for (const x of d.removed) push('remove', x.before, undefined);
          for (const x of d.changed) push('replace', x.before, x.after);
        }
        prev = { rp: c.rp, files };
        if (!seed.length) seed.push(...files.flatMap((f) => f.entries.map((e) => e.text)));
      }
    } catch (e) {
      warnings.push(`${s.spec}: the restore points of ${target} were not read: ${asAgentKeepError(e).oneLine()}`);
    }
  }
  return out;
}

/** Keep the writes of one entry (id or prefix, of the text before or after), and the chain through its texts. */
function chainOf(writes: MemoryWrite[], entry: string): MemoryWrite[] {
  const want = entry.trim().toLowerCase();
  const ids = (w: MemoryWrite): string[] =>
    [w.entry, w.before !== undefined ? textId(w.before) : undefined].filter((x): x is string => !!x);
  const inSet = new Set(writes.filter((w) => ids(w).some((i) => i.startsWith(want))));
  const texts = new Set<string>();
  for (let grew = true; grew;) {
    grew = false;
    for (const w of inSet) for (const t of [w.before, w.after]) if (t !== undefined) texts.add(norm(t));
    for (const w of writes) {
      if (inSet.has(w)) continue;
      if ([w.before, w.after].some((t) => t !== undefined && texts.has(norm(t)))) {
        inSet.add(w);
        grew = true;
      }
    }
  }
  return writes.filter((w) => inSet.has(w));
}

/**
 * memory.history: the writes of every store (or of one entry), oldest first (writes without a time
 * keep their order, before the timed ones of the same store).
 * @throws BadStore, StoreNotFound (a store that does not open); a history that cannot be read is a warning
 */
export async function memoryHistory(
  ctx: MemoryOpsContext,
  p: ParamsOf<'memoryHistory'>,
): Promise<ResultOf<'memoryHistory'>> {
  const warnings: string[] = [];
  let writes: MemoryWrite[] = [];
  for (const spec of uniqueStoreSpecs(p.stores)) {
    const s = openStore(spec);
    await s.check();
    writes.push(...(await storeWrites(ctx, s, p.target, warnings)));
  }
  if (p.entry) writes = chainOf(writes, p.entry);
  if (p.file) {
    const f = p.file;
    writes = writes.filter((w) => w.file !== undefined && (w.file === f || path.basename(w.file) === f));
  }
  writes = writes
    .map((w, i) => ({ w, i }))
    .sort((a, b) => (a.w.time ?? '').localeCompare(b.w.time ?? '') || a.i - b.i)
    .map((x) => x.w);
  return { writes, ...(warnings.length ? { warnings } : {}) };
}

/** The entry holding exactly `text` in `file` (or any file of the store when unknown), and its file. */
async function findText(
  s: MemoryStoreAdapter,
  text: string,
  file?: string,
): Promise<{ entry: MemoryEntry; file: MemoryFile } | undefined> {
  for (const f of await s.list()) {
    if (file && f.file !== file) continue;
    const e = f.entries.find((x) => x.text === text) ?? f.entries.find((x) => norm(x.text) === norm(text));
    if (e) return { entry: e, file: f };
  }
  return undefined;
}

/** One AgentKeep write through the adapter (CAS on the file as read, under the store's lock), logged. */
export async function writeEntry(
  ctx: MemoryOpsContext,
  s: MemoryStoreAdapter,
  step: { action: 'add' | 'replace' | 'remove'; entry?: MemoryEntry; file: string; text?: string },
  extra: WriteExtra,
): Promise<MemoryWrite> {
  const dir = backupDir(ctx.stateDir, s);
  const expected = s.contentHash ? await s.contentHash(step.file) : undefined;
  let rec: { entry: MemoryEntry; previous?: string; action: 'add' | 'replace' | 'remove' };
  if (step.action === 'remove') {
    if (!s.remove) throw unsupported(s, 'remove entries');
    const r = await s.remove(step.entry!.id, expected, { ...writeOpts(ctx, s), file: step.file });
    rec = { entry: r.removed, action: 'remove' };
  } else if (step.action === 'replace') {
    if (!s.edit) throw unsupported(s, 'edit entries');
    const r = await s.edit(step.entry!.id, step.text!, expected, { ...writeOpts(ctx, s), file: step.file });
    rec = { entry: r.entry, previous: r.previous.text, action: 'replace' };
  } else {
    if (!s.add) throw unsupported(s, 'add entries');
    const r = await s.add(step.text!, targetOf(step.file) ?? path.basename(step.file), expected, writeOpts(ctx, s));
    rec = { entry: r.entry, action: 'add' };
  }
  const line = await logWrite(dir, s, rec.action, rec.entry, rec.previous, extra);
  return {
    id: `log:${line}`,
    store: s.spec,
    source: 'agentkeep',
    time: new Date().toISOString(),
    action: rec.action,
    file: rec.entry.file ?? step.file,
    ...(targetOf(rec.entry.file ?? step.file) ? { target: targetOf(rec.entry.file ?? step.file) } : {}),
    entry: rec.entry.id,
    ...(rec.action === 'replace' ? { before: rec.previous, after: rec.entry.text } : {}),
    ...(rec.action === 'add' ? { after: rec.entry.text } : {}),
    ...(rec.action === 'remove' ? { before: rec.entry.text } : {}),
    ...extra,
  };
}

/**
 * memory.undoWrite: undo one write (MemoryWrite.id) or every write of a group (MemoryWrite.group,
 * newest first). Every step is planned first (each entry must still hold the text the write left);
 * then each is one compare-and-swap write under the store's lock, logged with `undoOf`.
 * @throws EntryNotFound (no such write), Conflict (the entry changed since; a file changed meanwhile),
 *   Unsupported (the text before is not known in full, or the store cannot write), TargetBusy
 */
export async function undoWrite(
  ctx: MemoryOpsContext,
  p: ParamsOf<'memoryUndoWrite'>,
): Promise<ResultOf<'memoryUndoWrite'>> {
  const { writes } = await memoryHistory(ctx, { stores: p.stores, ...(p.target ? { target: p.target } : {}) });
  const picked = writes.filter((w) => w.id === p.write || (w.group !== undefined && w.group === p.write)).reverse();
  if (!picked.length) {
    throw new AgentKeepError(
      'EntryNotFound',
      `No write ${p.write} in the history of ${p.stores.join(', ')}.`,
      'Pick a write id (or group) from agentkeep memory history --store S.',
    );
  }
  type Step = {
    w: MemoryWrite;
    s: MemoryStoreAdapter;
    action: 'add' | 'replace' | 'remove';
    text?: string;
    entry?: MemoryEntry;
    file: string;
  };
  const steps: Step[] = [];
  const skipped: string[] = [];
  for (const w of picked) {
    if (w.refused) {
      throw new AgentKeepError(
        'Conflict',
        `Write ${w.id} was refused by the agent's tool: nothing to undo.`,
        'Pick another write.',
      );
    }
    const s = openStore(w.store);
    await refuseReadOnly(s);
    const shown = `write ${w.id} (${w.action}${w.time ? ` at ${w.time}` : ''})`;
    if (w.action !== 'add' && w.before === undefined) {
      throw new AgentKeepError(
        'Unsupported',
        `The text before ${shown} is not known in full: the agent's tool named the entry by a part of it ("${(w.oldText ?? '').slice(0, 60)}") and no earlier write, hook record or restore point holds the whole entry.`,
        'Edit the entry by hand (memory edit), or install the agent hooks (agentkeep hook install hermes) so later writes are recorded exactly.',
      );
    }
    if (w.action === 'remove') {
      const there = await findText(s, w.before!, w.file);
      if (there) {
        // the text is there (again, or it was a copy of one that stayed): nothing to put back
        skipped.push(
          `${w.id}: "${w.before!.slice(0, 60)}" is in ${there.file.file} (entry ${there.entry.id}), nothing to add back`,
        );
        continue;
      }
      const file = w.file ?? (await s.list())[0]?.file;
      if (!file) throw unsupported(s, 'add entries');
      steps.push({ w, s, action: 'add', text: w.before!, file });
      continue;
    }
    const now = await findText(s, w.after!, w.file);
    if (!now) {
      throw new AgentKeepError(
        'Conflict',
        `The entry ${shown} wrote ("${w.after!.slice(0, 60)}") is not there any more: a later write changed or removed it. Nothing was changed.`,
        `See what came after: agentkeep memory history --store ${w.store} --entry ${w.entry ?? ''}; undo that write first.`,
      );
    }
    if (w.action === 'add') steps.push({ w, s, action: 'remove', entry: now.entry, file: now.file.file });
    else steps.push({ w, s, action: 'replace', entry: now.entry, text: w.before!, file: now.file.file });
  }
  const group = picked.length > 1 ? `undo-${Date.now().toString(36)}` : undefined;
  const done: MemoryWrite[] = [];
  for (const st of steps) {
    // a step after the first acts on what the earlier steps left: re-find the entry by its text
    if (st.entry && done.length) {
      const again = await findText(st.s, st.entry.text, st.file);
      if (again) st.entry = again.entry;
    }
    done.push(
      await writeEntry(ctx, st.s, st, {
        why: `undo of ${st.w.id}`,
        undoOf: st.w.id,
        ...(group ? { group } : {}),
      }),
    );
  }
  return { undone: picked, writes: done, ...(skipped.length ? { skipped } : {}) };
}

/**
 * memory.restoreEntry: add one entry of a restore point's capture back to its file (nothing else in
 * the store changes). alreadyPresent (nothing written) when the text is there now.
 * @throws RestorePointNotFound, BadStore (the restore point did not capture the store), EntryNotFound
 *   (not in the capture), Conflict (ambiguous prefix; the file changed meanwhile), OverBudget, Unsupported
 */
export async function restoreEntry(
  ctx: MemoryOpsContext,
  p: ParamsOf<'memoryRestoreEntry'>,
): Promise<ResultOf<'memoryRestoreEntry'>> {
  if (!ctx.getRestorePoint || !ctx.readObject)
    throw new AgentKeepError(
      'Internal',
      'memory restore-entry needs restore-point access.',
      'Call it through the core.',
    );
  const rp = await ctx.getRestorePoint(p.target, p.from);
  const s = openStore(p.store);
  if (!s.listCapture) throw unsupported(s, 'read its entries from a restore point');
  await refuseReadOnly(s);
  const cap = rp.agent.find((a) => a.store === s.spec || sameStore(a.store, s));
  if (!cap) {
    throw new AgentKeepError(
      'BadStore',
      `Restore point ${rp.id} has no capture of ${p.store} (captured: ${rp.agent.map((a) => a.store).join(', ') || 'none'}).`,
      'Name a store the restore point captured, or pick another restore point.',
    );
  }
  const byPath = new Map(cap.files.map((f) => [f.path, f.hash]));
  const files = await s.listCapture({
    files: [...byPath.keys()],
    read: async (rel) => (byPath.has(rel) ? ctx.readObject!(byPath.get(rel)!) : undefined),
    display: (rel) => `${cap.store}:${rel}@${rp.id}`,
  });
  const want = p.entry.trim().toLowerCase();
  const hits = files.flatMap((f) =>
    f.entries.filter((e) => e.id.toLowerCase().startsWith(want)).map((e) => ({ e, f })),
  );
  const uniq = hits.filter((h, i) => hits.findIndex((x) => x.e.id === h.e.id) === i);
  if (!uniq.length) {
    throw new AgentKeepError(
      'EntryNotFound',
      `Restore point ${rp.id} holds no entry ${p.entry} of ${p.store}.`,
      `See what it holds: agentkeep memory diff --from ${rp.id} --store ${p.store}`,
    );
  }
  if (uniq.length > 1) {
    throw new AgentKeepError(
      'Conflict',
      `Entry id ${p.entry} is ambiguous in restore point ${rp.id}: ${uniq
        .slice(0, 8)
        .map((h) => h.e.id)
        .join(', ')}.`,
      'Give more characters of the id.',
    );
  }
  const { e } = uniq[0];
  const there = await findText(s, e.text);
  if (there) return { entry: there.entry, alreadyPresent: true };
  // the capture shows the file as <store>:<rel>@<rp>; the live file is the one of the same kind
  const live = (await s.list()).find((f) => f.kind === uniq[0].f.kind && !f.readOnly);
  if (!live) throw unsupported(s, `write ${uniq[0].f.kind} entries`);
  const write = await writeEntry(
    ctx,
    s,
    { action: 'add', file: live.file, text: e.text },
    {
      why: `restore-entry from ${rp.id}`,
      restorePoint: rp.id,
    },
  );
  const now = await findText(s, e.text, live.file);
  return { entry: now?.entry ?? { id: write.entry ?? e.id, text: e.text, store: s.spec, file: live.file }, write };
}
