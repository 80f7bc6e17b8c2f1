/**
 * Reviewed edit sets over memory stores (issue 12): memory.forget (a fact and its copies in every
 * file of every store) and memory.lintFix (consolidation from the lint findings). Both first answer
 * a proposal: the edits, each file's content now and with the change, and a unified diff; nothing is
 * written. With `apply` the proposal is written, refused (Conflict, nothing written) when any file's
 * content hash is no longer the one the proposal was made on (`expected`). Each file is one write:
 * its new content from all its edits, compared with the proposal's hash under the store's lock,
 * backed up, temp file + rename (MemoryStoreAdapter.rewriteEntries), so a file is never half-edited;
 * a store without it (an API store) is written entry by entry, each a compare-and-swap (timeline.ts
 * writeEntry). All writes are logged with one `group`, which memory.undoWrite undoes as one step;
 * when a later file fails, the error names the files written and not, and offers that undo.
 */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import { nextAction, type MemoryEntry, type MemoryFile, type ParamsOf, type ResultOf } from '../../protocol';
import { AgentKeepError, asAgentKeepError } from '../../core/errors';
import { openStore, uniqueStoreSpecs } from '../index';
import type { MemoryStoreAdapter } from '../types';
import { backupDir, refuseReadOnly, unsupported, writeOpts, type MemoryOpsContext } from './common';
import { writeEntry } from './timeline';
import { logWrite, withWriteLog, type WriteExtra } from './writelog';

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
    const now = s.splitEntries ? s.splitEntries(before) : (current?.entries.map((e) => e.text) ?? []);
    const texts = editedEntries(now, list, file, true);
    const after = s.joinEntries ? s.joinEntries(texts) : texts.join('\n\n');
    const contentHash = s.contentHash ? await s.contentHash(file) : '';
    files.push({ store: spec, file, contentHash, before, after });
    diffs.push(unifiedDiff(before, after, `a${file}`, `b${file}`));
  }
  return { edits, files, diff: diffs.join(''), ...(skipped.length ? { skipped } : {}), applied: false };
}

/** The edits of one file of a set, in the set's order. */
type FileEdits = { store: MemoryStoreAdapter; file: string; contentHash: string; edits: Edit[] };

/** "/h/memories/MEMORY.md (2 edits)". */
function filesText(list: readonly FileEdits[]): string {
  return list.map((f) => `${f.file} (${f.edits.length} edit${f.edits.length === 1 ? '' : 's'})`).join(', ');
}

/**
 * The entry texts of a file with `edits` applied (each acts on the first instance of its `before`):
 * what the proposal shows and what the apply writes.
 * @param skipMissing pass over an edit whose entry is not there (the proposal) instead of refusing
 * @throws Conflict when an entry the change acts on is no longer in the file
 */
function editedEntries(
  entries: readonly string[],
  edits: readonly Edit[],
  file: string,
  skipMissing = false,
): string[] {
  const texts = [...entries];
  for (const e of edits) {
    const i = texts.indexOf(e.before);
    if (i < 0 && skipMissing) continue;
    if (i < 0)
      throw new AgentKeepError(
        'Conflict',
        `Entry ${e.entry} is no longer in ${file}: the file changed since the proposal was made. Nothing was written to it.`,
        'Make the proposal again (without --apply), review it, and apply that one.',
      );
    if (e.action === 'remove') texts.splice(i, 1);
    else texts[i] = e.after!;
  }
  return texts;
}

/** A file whose write landed but whose write-log records could not be appended. */
class UnloggedWrite extends Error {
  constructor(readonly error: unknown) {
    super('unlogged');
  }
}

/** A store written entry by entry that failed after `done` entries of the file (those are written and logged). */
class PartlyWritten extends Error {
  constructor(
    readonly error: unknown,
    readonly done: number,
  ) {
    super('partly written');
  }
}

/**
 * Write one file's edits and log them with `group`: in one write when the store can rewrite a file
 * (rewriteEntries: all or nothing), else entry by entry (each a compare-and-swap; API stores).
 * @throws the write's error (the file is as it was, or for an entry-by-entry store its earlier
 *   entries are written and logged); UnloggedWrite when the file was written but not logged
 */
async function writeFile(ctx: MemoryOpsContext, f: FileEdits, why: string, group: string): Promise<void> {
  const s = f.store;
  const extra = (e: Edit): WriteExtra => ({ why: `${why}: ${e.reason}`.slice(0, 300), group });
  if (s.rewriteEntries) {
    const r = await s.rewriteEntries(
      f.file,
      (entries) => editedEntries(entries, f.edits, f.file),
      f.contentHash,
      writeOpts(ctx, s),
    );
    if (!r.written) return;
    const dir = backupDir(ctx.stateDir, s);
    try {
      for (const e of f.edits) {
        if (e.action === 'remove') await logWrite(dir, s, 'remove', r.entry(e.before), undefined, extra(e));
        else await logWrite(dir, s, 'replace', r.entry(e.after!), e.before, extra(e));
      }
    } catch (e) {
      throw new UnloggedWrite(e);
    }
    return;
  }
  for (const [done, e] of f.edits.entries()) {
    try {
      const entry = (await s.list()).find((x) => x.file === f.file)?.entries.find((x) => x.text === e.before);
      if (!entry) editedEntries([], [e], f.file); // throws the Conflict
      await writeEntry(
        ctx,
        s,
        { action: e.action, entry, file: f.file, ...(e.after !== undefined ? { text: e.after } : {}) },
        extra(e),
      );
    } catch (err) {
      throw done ? new PartlyWritten(err, done) : err;
    }
  }
}

/**
 * The error of an apply that failed: the cause, and when files were written before it failed, which
 * (each stays written whole where the store writes a file at once, rewriteEntries; an API store's edits go one by one) and which not, with the undo of the written part as
 * a next action (memory.undoWrite of the group covers exactly what was written and logged).
 * @param unlogged the last written file's records could not be logged (its bytes before are in the backups)
 */
function applyError(
  ctx: MemoryOpsContext,
  e: unknown,
  written: readonly FileEdits[],
  rest: readonly FileEdits[],
  group: string,
  unlogged = false,
): AgentKeepError {
  const err = asAgentKeepError(e);
  const cause = err.message.replace(/\s*Nothing (else )?was (changed|written)( to it)?\.?\s*$/, '');
  if (!written.length) return new AgentKeepError(err.kind, `${cause} Nothing was written.`, err.hint, err.actions);
  const last = written[written.length - 1];
  const logged = unlogged ? written.slice(0, -1) : written;
  const stores = [...new Set(logged.map((f) => f.store.spec))];
  const undo = nextAction('Undo the written part', 'memoryUndoWrite', { stores, write: group }, { destructive: true });
  const parts = [
    `${cause} The change was written in part. Written: ${filesText(written)}; not written: ${rest.length ? filesText(rest) : 'none'}.`,
    logged.length ? `The written part is write group ${group}.` : '',
    unlogged
      ? `The write of ${last.file} could not be logged, so an undo of the group does not cover it: its bytes before are kept in ${backupDir(ctx.stateDir, last.store)}.`
      : '',
  ];
  return new AgentKeepError(
    err.kind,
    parts.filter(Boolean).join(' '),
    `${err.hint ? `${err.hint.replace(/\.?$/, '.')} ` : ''}Then make the proposal again (it covers what is left) and apply it, or undo the written part.`,
    [...(logged.length ? [undo] : []), ...(err.actions ?? [])],
  );
}

/**
 * Write a proposal: the CAS of every file against the proposal's hashes and every store's ability to
 * write first (nothing written on a refusal); then file by file, each file in one write (its new
 * content from all its edits, checked against its hash under the store's lock, temp + rename), all
 * logged with one `group`. A failure at a later file leaves the earlier ones written whole: the
 * error names what was written and what not, and offers the undo of the group.
 * @throws Conflict, InvalidParams, Unsupported before anything is written; the failing file's error
 *   (applyError) after
 */
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
  const files: FileEdits[] = set.files.map((f) => ({
    store: stores.get(f.store)!,
    file: f.file,
    contentHash: f.contentHash,
    edits: set.edits.filter((e) => e.store === f.store && e.file === f.file),
  }));
  for (const s of new Set(files.map((f) => f.store))) {
    await refuseReadOnly(s);
    if (
      !s.rewriteEntries &&
      files.some((f) => f.store === s && f.edits.some((e) => e.action === 'remove')) &&
      !s.remove
    )
      throw unsupported(s, 'remove entries');
    if (!s.rewriteEntries && files.some((f) => f.store === s && f.edits.some((e) => e.action === 'replace')) && !s.edit)
      throw unsupported(s, 'edit entries');
  }
  const group = `${why.split(' ')[0]}-${Date.now().toString(36)}`;
  for (let i = 0; i < files.length; i++) {
    try {
      await writeFile(ctx, files[i], why, group);
    } catch (e) {
      if (e instanceof UnloggedWrite)
        throw applyError(ctx, e.error, files.slice(0, i + 1), files.slice(i + 1), group, true);
      if (e instanceof PartlyWritten) {
        const f = files[i];
        const done = { ...f, edits: f.edits.slice(0, e.done) };
        const left = { ...f, edits: f.edits.slice(e.done) };
        throw applyError(ctx, e.error, [...files.slice(0, i), done], [left, ...files.slice(i + 1)], group);
      }
      throw applyError(ctx, e, files.slice(0, i), files.slice(i), group);
    }
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
  // required here, not imported: see lintMemory (./index.ts)
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runLint } = require('../lint/run') as typeof import('../lint/run');
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
  // a failing embeddings endpoint: the near-duplicates it would have found are not in this set (say so,
  // or "Nothing to lint --fix." reads as "no near-duplicates")
  for (const f of findings)
    if (f.kind === 'store' && f.severity === 'warning' && f.message.startsWith('The embeddings endpoint '))
      skipped.unshift(f.message);
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
