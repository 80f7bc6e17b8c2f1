/**
 * Reviewed edit sets over memory stores (issue 12): memory.forget (a fact and its copies in every
 * file of every store) and memory.lintFix (consolidation from the lint findings). Both first answer
 * a proposal: the edits, each file's content now and with the change, and a unified diff; nothing is
 * written. With `apply` the proposal is written, refused (Conflict, nothing written) when any file's
 * content hash is no longer the one the proposal was made on (`expected`), each entry write a
 * compare-and-swap under the store's lock (sidecar/memory/ops/timeline.ts writeEntry), all logged
 * with one `group`, which memory.undoWrite undoes as one step.
 */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import type { MemoryEntry, MemoryFile, ParamsOf, ResultOf } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import { runLint } from '../lint/run';
import { openStore, uniqueStoreSpecs } from '../index';
import type { MemoryStoreAdapter } from '../types';
import { backupDir, refuseReadOnly, unsupported, type MemoryOpsContext } from './common';
import { writeEntry } from './timeline';
import { withWriteLog } from './writelog';

type EditSet = ResultOf<'memoryForget'>;
type Edit = EditSet['edits'][number];

function norm(s: string): string {
  return s.replace(/\s+/g, ' ').trim().toLowerCase();
}

/**
 * A unified diff (3 lines of context) of two texts, by line, with `--- nameA` / `+++ nameB`
 * headers (jsdiff's createTwoFilesPatch; "\\ No newline at end of file" where a text has no final
 * newline, as Hermes writes MEMORY.md); "" when they are equal.
 */
export function unifiedDiff(a: string, b: string, nameA: string, nameB: string): string {
  if (a === b) return '';
  return createTwoFilesPatch(nameA, nameB, a, b, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  });
}

/** Build the proposal: each touched file before and after (entries removed / replaced), and the diff. */
async function propose(edits: Edit[], stores: Map<string, MemoryStoreAdapter>, skipped: string[]): Promise<EditSet> {
  const files: EditSet['files'] = [];
  const diffs: string[] = [];
  const byFile = new Map<string, Edit[]>();
  for (const e of edits) {
    const k = `${e.store}\0${e.file}`;
    byFile.set(k, [...(byFile.get(k) ?? []), e]);
  }
  for (const [k, list] of byFile) {
    const [spec, file] = k.split('\0');
    const s = stores.get(spec)!;
    const current = (await s.list()).find((f) => f.file === file);
    const before =
      (s.fileText ? await s.fileText(file) : undefined) ?? current?.entries.map((e) => e.text).join('\n\n') ?? '';
    const texts = s.splitEntries ? s.splitEntries(before) : (current?.entries.map((e) => e.text) ?? []);
    for (const e of list) {
      const i = texts.indexOf(e.before);
      if (i < 0) continue;
      if (e.action === 'remove') texts.splice(i, 1);
      else texts[i] = e.after!;
    }
    const after = s.joinEntries ? s.joinEntries(texts) : texts.join('\n\n');
    const contentHash = s.contentHash ? await s.contentHash(file) : '';
    files.push({ store: spec, file, contentHash, before, after });
    diffs.push(unifiedDiff(before, after, `a${file}`, `b${file}`));
  }
  return { edits, files, diff: diffs.join(''), ...(skipped.length ? { skipped } : {}), applied: false };
}

/** Write a proposal: CAS of every file first, then each edit (logged with one group). */
async function apply(
  ctx: MemoryOpsContext,
  set: EditSet,
  stores: Map<string, MemoryStoreAdapter>,
  expected: Record<string, string> | undefined,
  why: string,
): Promise<EditSet> {
  for (const f of set.files) {
    const want = expected?.[f.file];
    if (expected && want === undefined) {
      throw new AgentKeepError(
        'InvalidParams',
        `The proposal being applied does not cover ${f.file}, which the change touches now.`,
        'Make the proposal again (without --apply) and review it.',
      );
    }
    if (want !== undefined && want !== f.contentHash) {
      throw new AgentKeepError(
        'Conflict',
        `${f.file} changed since the proposal was made (sha256 ${f.contentHash.slice(0, 12)}…, proposal ${want.slice(0, 12)}…). Nothing was written.`,
        'Make the proposal again (without --apply), review it, and apply that one.',
      );
    }
  }
  // a file the proposal changed that this one does not touch any more: it changed since (the finding is gone)
  for (const file of Object.keys(expected ?? {})) {
    if (!set.files.some((f) => f.file === file)) {
      throw new AgentKeepError(
        'Conflict',
        `${file} changed since the proposal was made: the change no longer touches it. Nothing was written.`,
        'Make the proposal again (without --apply), review it, and apply that one.',
      );
    }
  }
  if (!set.edits.length) return set;
  for (const s of stores.values()) if (set.edits.some((e) => e.store === s.spec)) await refuseReadOnly(s);
  const group = `${why.split(' ')[0]}-${Date.now().toString(36)}`;
  for (const e of set.edits) {
    const s = stores.get(e.store)!;
    if (e.action === 'remove' && !s.remove) throw unsupported(s, 'remove entries');
    const f = (await s.list()).find((x) => x.file === e.file);
    const entry = f?.entries.find((x) => x.text === e.before);
    if (!entry) {
      throw new AgentKeepError(
        'Conflict',
        `Entry ${e.entry} is no longer in ${e.file}: the file changed while the change was written. What was written so far is group ${group} (memory undo-write --write ${group}).`,
        'Look at memory history, then make the proposal again.',
      );
    }
    await writeEntry(
      ctx,
      s,
      { action: e.action, entry, file: e.file, ...(e.after !== undefined ? { text: e.after } : {}) },
      { why: `${why}: ${e.reason}`.slice(0, 300), group },
    );
  }
  return { ...set, applied: true, group };
}

function openAll(ctx: MemoryOpsContext, specs: string[]): Map<string, MemoryStoreAdapter> {
  return new Map(
    uniqueStoreSpecs(specs).map((spec) => [
      spec,
      withWriteLog(openStore(spec), backupDir(ctx.stateDir, openStore(spec))),
    ]),
  );
}

/**
 * memory.forget: the entry `entry` (id or prefix) and its copies (same text, whitespace and case
 * aside), or every entry containing `text`, in every editable file of every store: a proposal, or
 * with `apply` the change written as one undo group.
 * @throws InvalidParams (neither entry nor text), EntryNotFound, Conflict (a file changed since the proposal)
 */
export async function forgetMemory(ctx: MemoryOpsContext, p: ParamsOf<'memoryForget'>): Promise<EditSet> {
  if (!p.entry && !p.text?.trim())
    throw new AgentKeepError(
      'InvalidParams',
      'memory forget needs an entry id or a text.',
      'Give --entry ID or --text "…".',
    );
  const stores = openAll(ctx, p.stores);
  const listed: Array<{ s: MemoryStoreAdapter; f: MemoryFile }> = [];
  for (const s of stores.values()) for (const f of await s.list()) listed.push({ s, f });
  let match: (e: MemoryEntry) => boolean;
  let what: string;
  if (p.entry) {
    const want = p.entry.trim().toLowerCase();
    const hits = listed.flatMap(({ f }) => f.entries.filter((e) => e.id.toLowerCase().startsWith(want)));
    const ids = [...new Set(hits.map((e) => e.id))];
    if (!ids.length)
      throw new AgentKeepError(
        'EntryNotFound',
        `No entry ${p.entry} in ${p.stores.join(', ')}.`,
        'See memory list for the ids.',
      );
    if (ids.length > 1)
      throw new AgentKeepError(
        'Conflict',
        `Entry id ${p.entry} is ambiguous: ${ids.slice(0, 8).join(', ')}.`,
        'Give more characters of the id.',
      );
    const t = norm(hits[0].text);
    match = (e) => norm(e.text) === t;
    what = `forget "${hits[0].text.slice(0, 80)}" and its copies`;
  } else {
    const t = p.text!.trim().toLowerCase();
    match = (e) => e.text.toLowerCase().includes(t);
    what = `forget every entry that contains "${p.text!.trim()}"`;
  }
  const edits: Edit[] = [];
  const skipped: string[] = [];
  for (const { s, f } of listed) {
    for (const e of f.entries.filter(match)) {
      if (f.readOnly) {
        skipped.push(`${e.id} in ${f.file}: the file is read-only in AgentKeep (${f.readOnly}); change it by hand`);
        continue;
      }
      edits.push({ store: s.spec, file: f.file, action: 'remove', entry: e.id, before: e.text, reason: what });
    }
  }
  const set = await propose(edits, stores, skipped);
  return p.apply ? apply(ctx, set, stores, p.expected, 'forget') : set;
}

/**
 * memory.lintFix: one edit set from the current findings. Duplicates, near-duplicates and superseded
 * entries: the finding's last entry is the newest (LintFinding.entries: "newest last where known"),
 * so it stays and the others go. Contradictions and the other kinds need a person: listed in
 * `skipped`. An entry one finding keeps is never dropped by another.
 * @throws as runLint; Conflict (a file changed since the proposal)
 */
export async function lintFix(ctx: MemoryOpsContext, p: ParamsOf<'memoryLintFix'>): Promise<EditSet> {
  const stores = openAll(ctx, p.stores);
  const { findings } = await runLint(
    {
      stores: [...stores.keys()],
      ...(p.target ? { target: p.target } : {}),
      ...(p.embeddings ? { embeddings: p.embeddings } : {}),
    },
    { openStore: (spec) => stores.get(spec) ?? openStore(spec) },
  );
  const listed: Array<{ s: MemoryStoreAdapter; f: MemoryFile; e: MemoryEntry; n: number }> = [];
  for (const s of stores.values())
    for (const f of await s.list()) {
      const seen = new Map<string, number>();
      for (const e of f.entries) {
        const n = seen.get(e.id) ?? 0;
        seen.set(e.id, n + 1);
        listed.push({ s, f, e, n });
      }
    }
  const key = (x: (typeof listed)[number]): string => `${x.s.spec}\0${x.f.file}\0${x.e.id}\0${x.n}`;
  const keep = new Set<string>();
  const drop = new Map<string, { x: (typeof listed)[number]; reason: string }>();
  const skipped: string[] = [];
  for (const f of findings) {
    if (f.kind !== 'duplicate' && f.kind !== 'near-duplicate' && f.kind !== 'superseded') {
      if (f.kind === 'contradiction')
        skipped.push(`contradiction of ${f.entries.join(', ')}: a person decides which is true (${f.message})`);
      continue;
    }
    // each id of the finding, in order, to the next instance of it (an exact copy in one file shares its id)
    const used = new Map<string, number>();
    const members: Array<(typeof listed)[number]> = [];
    for (const id of f.entries) {
      const n = used.get(id) ?? 0;
      const hit = listed.filter((x) => x.e.id === id && (!f.stores?.length || f.stores.includes(x.s.spec)))[n];
      used.set(id, n + 1);
      if (hit) members.push(hit);
    }
    if (members.length < 2) continue;
    const newest = members[members.length - 1];
    if (drop.has(key(newest))) {
      skipped.push(
        `${f.kind} of ${f.entries.join(', ')}: its newest entry ${newest.e.id} is dropped by another finding`,
      );
      continue;
    }
    keep.add(key(newest));
    const evidence = f.evidence?.length ? ` (${f.evidence.join('; ')})` : '';
    for (const m of members.slice(0, -1)) {
      if (keep.has(key(m))) continue;
      if (m.f.readOnly) {
        skipped.push(`${m.e.id} in ${m.f.file}: the file is read-only in AgentKeep`);
        continue;
      }
      const verb = f.kind === 'superseded' ? 'superseded by' : 'a copy of';
      drop.set(key(m), { x: m, reason: `${f.kind}: ${verb} ${newest.e.id}, which stays${evidence}`.slice(0, 500) });
    }
  }
  const edits: Edit[] = [...drop.values()].map(({ x, reason }) => ({
    store: x.s.spec,
    file: x.f.file,
    action: 'remove' as const,
    entry: x.e.id,
    before: x.e.text,
    reason,
  }));
  const set = await propose(edits, stores, skipped);
  return p.apply ? apply(ctx, set, stores, p.expected, 'lint --fix') : set;
}
