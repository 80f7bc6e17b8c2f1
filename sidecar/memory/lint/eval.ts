/**
 * Precision and recall of the memory lint on the labelled cases in test/cases/memory-lint (format:
 * its README.md). Used by `npm run eval:memory` (scripts/eval-memory.ts) and the unit test.
 *
 * Scoring units: duplicate / near-duplicate / contradiction → each unordered pair of entries in a
 * finding (a cluster of n entries is n·(n-1)/2 pairs; for near-duplicate, pairs of exact copies are
 * left out, they are duplicates); untraceable / stale / age → each entry; over-budget / drift /
 * store → the file (the first word of the message, which names it) in the store.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { LintFinding } from '../../protocol';
import { parseEntries, usageChars } from '../hermes';
import { lintEntries } from './index';
import type { LintEntry, LintFile, LintInput, LintOptions, LintStore, MachineFacts } from './model';
import { loadBundledEncoder, type EncoderResult } from './encoder';
import { exactKey } from './text';

/** Sentence vectors of case texts (text → vector of `model`), made once per run by caseVectors. */
export interface CaseVectors {
  model: string;
  of: Map<string, Float32Array>;
}

/**
 * The sentence vectors of every entry text of `cases`, from the bundled encoder (encoder.ts), as
 * runLint would put them in; undefined (with the reason) when the encoder cannot be loaded.
 */
export async function caseVectors(
  cases: LintCase[],
  encoder: EncoderResult | Promise<EncoderResult> = loadBundledEncoder(),
): Promise<CaseVectors | { missing: string }> {
  const r = await encoder;
  if ('missing' in r) return r;
  const texts = [
    ...new Set(
      cases.flatMap((c) => caseInput(c).stores.flatMap((s) => s.files.flatMap((f) => f.entries.map((e) => e.text)))),
    ),
  ];
  const vecs = await r.encoder.embed(texts);
  return { model: r.encoder.model, of: new Map(texts.map((t, k) => [t, vecs[k]])) };
}

/** Put the vectors of `v` into the entries of `input` (in place), as runLint's embedEntries does. */
function withVectors(input: LintInput, v?: CaseVectors): LintInput {
  if (!v) return input;
  for (const s of input.stores)
    for (const f of s.files)
      for (const e of f.entries) {
        const vector = v.of.get(e.text);
        if (vector && !e.embedding) e.embedding = { model: v.model, vector };
      }
  return input;
}

type CaseEntry = string | { text: string; createdAt?: string; updatedAt?: string; traced?: boolean };
interface CaseFile {
  store?: string;
  kind?: string;
  name?: string;
  limit?: number;
  raw?: string;
  entries?: CaseEntry[];
  warnings?: string[];
}
/** One labelled case (test/cases/memory-lint/README.md). */
export interface LintCase {
  id: string;
  source?: string;
  /** Real-wording set: the split, fixed per source in the case file (test/cases/memory-real/README.md). */
  split?: 'dev' | 'heldout';
  /** Real-wording set: exact, restated, paraphrase, update-over-time, scoped-lookalike, ... */
  subkind?: string;
  /** Real-wording set: duplicate, contradiction or none. */
  family?: string;
  /** Real-wording set: ISO language codes of the entries ("en", "zh+en"). */
  lang?: string;
  derived?: boolean;
  note?: string;
  entries?: CaseEntry[];
  files?: CaseFile[];
  machine?: MachineFacts;
  now?: string;
  expect: Array<{ kind: LintFinding['kind']; entries?: string[]; file?: string }>;
  /** Set by the loader: the file it came from. */
  from?: string;
}

/** The split of a case, fixed by its id: sha256(id)[0] % 3 === 0 → heldout. */
export function splitOf(id: string): 'dev' | 'heldout' {
  return createHash('sha256').update(id).digest()[0] % 3 === 0 ? 'heldout' : 'dev';
}

/** Load every case of a directory (*.json), sorted by id. @throws when a file is not valid JSON or an id repeats */
export async function loadCases(dir: string): Promise<LintCase[]> {
  const out: LintCase[] = [];
  const ids = new Set<string>();
  for (const name of (await fs.readdir(dir)).filter((n) => n.endsWith('.json')).sort()) {
    const doc = JSON.parse(await fs.readFile(path.join(dir, name), 'utf8')) as {
      cases: LintCase[];
      source?: string;
      split?: 'dev' | 'heldout';
    };
    if (doc.split !== undefined && doc.split !== 'dev' && doc.split !== 'heldout')
      throw new Error(`${name}: split must be "dev" or "heldout", not ${JSON.stringify(doc.split)}`);
    for (const c of doc.cases) {
      if (ids.has(c.id)) throw new Error(`case id "${c.id}" repeats (in ${name})`);
      ids.add(c.id);
      out.push({
        ...c,
        ...(doc.source && !c.source ? { source: doc.source } : {}),
        ...(doc.split ? { split: doc.split } : {}),
        from: name,
      });
    }
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

const HERMES_LIMITS: Record<string, number> = { 'hermes-memory': 2200, 'hermes-user': 1375 };

/** Build the lint input of a case (ids e1, e2 ... across files, in order). */
export function caseInput(c: LintCase): LintInput {
  const files: CaseFile[] = c.files ?? [{ entries: c.entries ?? [] }];
  const stores = new Map<string, LintStore>();
  let n = 0;
  for (const f of files) {
    const storeName = f.store ?? 'hermes:/h';
    const kind = f.kind ?? 'hermes-memory';
    const name = f.name ?? 'MEMORY.md';
    const root = storeName.replace(/^[a-z0-9-]+:/i, '');
    const texts: CaseEntry[] = f.raw !== undefined ? parseEntries(f.raw) : (f.entries ?? []);
    const entries: LintEntry[] = texts.map((e) => {
      const o = typeof e === 'string' ? { text: e } : e;
      n++;
      return {
        id: `e${n}`,
        text: o.text,
        ...(o.createdAt ? { createdAt: o.createdAt } : {}),
        ...(o.updatedAt ? { updatedAt: o.updatedAt } : {}),
        ...(o.traced !== undefined
          ? {
              provenance: {
                traced: o.traced,
                note: o.traced ? undefined : 'no memory tool call in state.db matches this text',
              },
            }
          : {}),
      };
    });
    const limit = f.limit ?? HERMES_LIMITS[kind];
    const file: LintFile = {
      kind,
      file: path.posix.join(root, kind.startsWith('hermes') && !name.includes('SOUL') ? 'memories' : '', name),
      entries,
      ...(limit !== undefined ? { usage: { chars: usageChars(entries.map((e) => e.text)), limit } } : {}),
      ...(f.raw !== undefined ? { raw: f.raw } : {}),
      ...(f.warnings ? { warnings: f.warnings } : {}),
    };
    if (!stores.has(storeName)) stores.set(storeName, { store: storeName, files: [] });
    stores.get(storeName)!.files.push(file);
  }
  return {
    stores: [...stores.values()],
    ...(c.machine ? { machine: c.machine } : {}),
    ...(c.now ? { now: Date.parse(c.now) } : {}),
  };
}

const PAIR_KINDS = new Set(['duplicate', 'near-duplicate', 'contradiction']);
const FILE_KINDS = new Set(['over-budget', 'drift', 'store']);

function pairUnits(kind: string, ids: string[], keyOf: (id: string) => string): string[] {
  const out: string[] = [];
  const u = [...new Set(ids)].sort();
  for (let i = 0; i < u.length; i++) {
    for (let j = i + 1; j < u.length; j++) {
      if (kind === 'near-duplicate' && keyOf(u[i]) === keyOf(u[j])) continue;
      out.push(`${kind} ${u[i]}|${u[j]}`);
    }
  }
  return out;
}

/** Scoring units of findings (see the module doc). */
export function findingUnits(
  f: Pick<LintFinding, 'kind' | 'entries' | 'message' | 'stores'>,
  keyOf: (id: string) => string,
): string[] {
  // A change over time (issue 12) is the contradiction family: these cases were labelled before it existed.
  if (f.kind === 'superseded') return pairUnits('contradiction', f.entries, keyOf);
  if (PAIR_KINDS.has(f.kind)) return pairUnits(f.kind, f.entries, keyOf);
  if (FILE_KINDS.has(f.kind)) return [`${f.kind} ${f.stores?.[0] ?? ''} ${f.message.split(/\s/)[0].replace(/:$/, '')}`];
  return f.entries.map((id) => `${f.kind} ${id}`);
}

/** Per-kind counts. */
export interface Score {
  tp: number;
  fp: number;
  fn: number;
}
/** Result of one case. */
export interface CaseResult {
  id: string;
  split: 'dev' | 'heldout';
  fp: string[];
  fn: string[];
  ms: number;
}
/** Scores per split and kind ("all" = every kind). */
export interface EvalReport {
  cases: CaseResult[];
  scores: Record<'dev' | 'heldout' | 'all', Record<string, Score>>;
}

/** precision, recall (1 when the denominator is 0). */
export function pr(s: Score): { precision: number; recall: number } {
  return { precision: s.tp + s.fp ? s.tp / (s.tp + s.fp) : 1, recall: s.tp + s.fn ? s.tp / (s.tp + s.fn) : 1 };
}

/** Run every case and score. */
export function evaluate(cases: LintCase[], options?: Partial<LintOptions>, vectors?: CaseVectors): EvalReport {
  const scores: EvalReport['scores'] = { dev: {}, heldout: {}, all: {} };
  const results: CaseResult[] = [];
  const bump = (split: 'dev' | 'heldout', kind: string, k: keyof Score): void => {
    for (const s of [split, 'all'] as const) {
      for (const kk of [kind, 'all']) {
        scores[s][kk] ??= { tp: 0, fp: 0, fn: 0 };
        scores[s][kk][k]++;
      }
    }
  };
  for (const c of cases) {
    const input = withVectors(caseInput(c), vectors);
    if (options) input.options = options;
    const keys = new Map<string, string>();
    const storeOf = new Map<string, string>();
    for (const s of input.stores)
      for (const f of s.files)
        for (const e of f.entries) {
          keys.set(e.id, exactKey(e.text));
          storeOf.set(e.id, s.store);
        }
    const keyOf = (id: string): string => keys.get(id) ?? id;
    const t0 = performance.now();
    const findings = lintEntries(input);
    const ms = performance.now() - t0;
    const got = new Set(findings.flatMap((f) => findingUnits(f, keyOf)));
    const want = new Set(
      c.expect.flatMap((x) =>
        FILE_KINDS.has(x.kind)
          ? [`${x.kind} ${c.files?.find((f) => (f.name ?? 'MEMORY.md') === x.file)?.store ?? 'hermes:/h'} ${x.file}`]
          : findingUnits({ kind: x.kind, entries: x.entries ?? [], message: '' }, keyOf),
      ),
    );
    const split = c.split ?? splitOf(c.id);
    const fp = [...got].filter((u) => !want.has(u));
    const fn = [...want].filter((u) => !got.has(u));
    for (const u of got) bump(split, u.split(' ')[0], want.has(u) ? 'tp' : 'fp');
    for (const u of fn) bump(split, u.split(' ')[0], 'fn');
    results.push({ id: c.id, split, fp, fn, ms });
  }
  return { cases: results, scores };
}

/** A plain-text table of the report (what `npm run eval:memory` prints). */
export function formatReport(r: EvalReport): string {
  const lines: string[] = [];
  const n = (s: 'dev' | 'heldout'): number => r.cases.filter((c) => c.split === s).length;
  lines.push(`cases: ${r.cases.length} (dev ${n('dev')}, held-out ${n('heldout')})`);
  lines.push('');
  lines.push('kind            split     precision  recall   tp  fp  fn');
  const kinds = [...new Set(Object.keys(r.scores.all))].sort((a, b) =>
    a === 'all' ? 1 : b === 'all' ? -1 : a < b ? -1 : 1,
  );
  for (const k of kinds) {
    for (const s of ['dev', 'heldout'] as const) {
      const sc = r.scores[s][k] ?? { tp: 0, fp: 0, fn: 0 };
      const { precision, recall } = pr(sc);
      lines.push(
        `${k.padEnd(15)} ${s.padEnd(9)} ${precision.toFixed(3).padStart(9)}  ${recall.toFixed(3).padStart(6)}  ${String(sc.tp).padStart(3)} ${String(sc.fp).padStart(3)} ${String(sc.fn).padStart(3)}`,
      );
    }
  }
  const bad = r.cases.filter((c) => c.fp.length || c.fn.length);
  if (bad.length) {
    lines.push('');
    lines.push('cases with errors:');
    for (const c of bad) {
      lines.push(
        `  ${c.id} [${c.split}]${c.fp.length ? `  false positives: ${c.fp.join('; ')}` : ''}${c.fn.length ? `  missed: ${c.fn.join('; ')}` : ''}`,
      );
    }
  }
  return lines.join('\n');
}

/** The two pair families of issue 12: duplicate (duplicate, near-duplicate) and contradiction (contradiction, superseded). */
export function familyOf(kind: string): 'duplicate' | 'contradiction' | undefined {
  if (kind === 'duplicate' || kind === 'near-duplicate') return 'duplicate';
  if (kind === 'contradiction' || kind === 'superseded') return 'contradiction';
  return undefined;
}

function familyUnits(kind: string, ids: string[]): string[] {
  const fam = familyOf(kind);
  if (!fam) return [];
  const u = [...new Set(ids)].sort();
  const out: string[] = [];
  for (let i = 0; i < u.length; i++) for (let j = i + 1; j < u.length; j++) out.push(`${fam} ${u[i]}|${u[j]}`);
  return out;
}

/** Word Jaccard of two texts (letters and digits; CJK/Thai as character bigrams): how much wording two entries share. */
export function wordOverlap(a: string, b: string): number {
  const words = (t: string): Set<string> => {
    const out = new Set<string>();
    for (const m of t
      .normalize('NFKC')
      .toLowerCase()
      .matchAll(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}]+|[\p{L}\p{N}]+/gu)) {
      const w = m[0];
      if (/^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}]/u.test(w)) {
        if (w.length === 1) out.add(w);
        for (let i = 0; i + 1 < w.length; i++) out.add(w.slice(i, i + 2));
      } else out.add(w);
    }
    return out;
  };
  const x = words(a);
  const y = words(b);
  let inter = 0;
  for (const w of x) if (y.has(w)) inter++;
  return x.size + y.size - inter ? inter / (x.size + y.size - inter) : 1;
}

/** Result of one real-wording case. */
export interface RealCaseResult extends CaseResult {
  subkind: string;
  lang: string;
  source: string;
}
/** Scores of the real-wording set: per split, per family and per sub-kind. */
export interface RealReport {
  cases: RealCaseResult[];
  /** split → row → score; rows: "family:duplicate", "family:contradiction", "family:all", "subkind:<s>", "lang:non-English". */
  scores: Record<'dev' | 'heldout', Record<string, Score>>;
  /** Share of the expected pairs whose two entries have word Jaccard < 0.3 (little word overlap), per split. */
  lowOverlap: Record<'dev' | 'heldout', { pairs: number; low: number }>;
  /** Negative cases (nothing expected) per split and sub-kind: how many, and how many stayed quiet. */
  negatives: Record<'dev' | 'heldout', Record<string, { cases: number; quiet: number }>>;
}

/**
 * Score the real-wording cases (test/cases/memory-real) by family: an expected entry pair found in a
 * finding of the same family is a true positive, whichever kind in the family; a pair finding not
 * expected is a false positive, counted against the case's sub-kind. Other finding kinds are ignored.
 */
export function evaluateReal(cases: LintCase[], options?: Partial<LintOptions>, vectors?: CaseVectors): RealReport {
  const scores: RealReport['scores'] = { dev: {}, heldout: {} };
  const lowOverlap: RealReport['lowOverlap'] = { dev: { pairs: 0, low: 0 }, heldout: { pairs: 0, low: 0 } };
  const results: RealCaseResult[] = [];
  const negatives: RealReport['negatives'] = { dev: {}, heldout: {} };
  for (const c of cases) {
    const input = withVectors(caseInput(c), vectors);
    if (options) input.options = options;
    const text = new Map<string, string>();
    for (const s of input.stores) for (const f of s.files) for (const e of f.entries) text.set(e.id, e.text);
    const t0 = performance.now();
    const findings = lintEntries(input);
    const ms = performance.now() - t0;
    const got = new Set(findings.flatMap((f) => familyUnits(f.kind, f.entries)));
    const want = new Set(c.expect.flatMap((x) => familyUnits(x.kind, x.entries ?? [])));
    const split = c.split ?? splitOf(c.id);
    const subkind = c.subkind ?? 'other';
    const lang = c.lang ?? 'en';
    const rows = [
      `subkind:${subkind}`,
      ...(lang !== 'en' ? ['lang:non-English'] : []),
      ...(c.derived ? ['origin:derived'] : ['origin:as-written']),
    ];
    const bump = (fam: string, k: keyof Score): void => {
      for (const r of [`family:${fam}`, 'family:all', ...rows]) {
        scores[split][r] ??= { tp: 0, fp: 0, fn: 0 };
        scores[split][r][k]++;
      }
    };
    const fp = [...got].filter((u) => !want.has(u));
    const fn = [...want].filter((u) => !got.has(u));
    for (const u of got) bump(u.split(' ')[0], want.has(u) ? 'tp' : 'fp');
    for (const u of fn) bump(u.split(' ')[0], 'fn');
    // rows with no unit at all still show up (a negative case that stayed quiet)
    for (const r of rows) scores[split][r] ??= { tp: 0, fp: 0, fn: 0 };
    for (const u of want) {
      const [a, b] = u.split(' ')[1].split('|');
      lowOverlap[split].pairs++;
      if (wordOverlap(text.get(a) ?? '', text.get(b) ?? '') < 0.3) lowOverlap[split].low++;
    }
    if (want.size === 0) {
      const n = (negatives[split][subkind] ??= { cases: 0, quiet: 0 });
      n.cases++;
      if (got.size === 0) n.quiet++;
    }
    results.push({ id: c.id, split, fp, fn, ms, subkind, lang, source: c.source ?? '' });
  }
  return { cases: results, scores, lowOverlap, negatives };
}

/** A plain-text table of the real-wording report; failures listed only for the splits in `errorsFor`. */
export function formatRealReport(r: RealReport, errorsFor: Array<'dev' | 'heldout'> = ['dev']): string {
  const lines: string[] = [];
  const n = (s: 'dev' | 'heldout'): number => r.cases.filter((c) => c.split === s).length;
  const src = (s: 'dev' | 'heldout'): number => new Set(r.cases.filter((c) => c.split === s).map((c) => c.source)).size;
  lines.push(
    `real-wording cases: ${r.cases.length} (dev ${n('dev')} from ${src('dev')} sources, held-out ${n('heldout')} from ${src('heldout')} sources)`,
  );
  for (const s of ['dev', 'heldout'] as const) {
    const lo = r.lowOverlap[s];
    lines.push(
      `  ${s}: ${lo.low} of ${lo.pairs} expected pairs (${lo.pairs ? Math.round((lo.low / lo.pairs) * 100) : 0}%) have word Jaccard < 0.3`,
    );
  }
  lines.push('');
  lines.push('row                              dev: P      R     tp  fp  fn | held-out: P      R     tp  fp  fn');
  const rows = [...new Set([...Object.keys(r.scores.dev), ...Object.keys(r.scores.heldout)])].sort((a, b) => {
    const rank = (x: string): number => (x.startsWith('family:') ? 0 : x.startsWith('subkind:') ? 1 : 2);
    return rank(a) - rank(b) || (a === 'family:all' ? 1 : b === 'family:all' ? -1 : a < b ? -1 : 1);
  });
  const cell = (sc?: Score): string => {
    if (!sc) return '     –      –      –   –   –';
    const { precision, recall } = pr(sc);
    return `${(sc.tp + sc.fp ? precision.toFixed(3) : '  –  ').padStart(6)} ${(sc.tp + sc.fn ? recall.toFixed(3) : '  –  ').padStart(6)} ${String(sc.tp).padStart(5)} ${String(sc.fp).padStart(3)} ${String(sc.fn).padStart(3)}`;
  };
  for (const row of rows) lines.push(`${row.padEnd(30)} ${cell(r.scores.dev[row])} | ${cell(r.scores.heldout[row])}`);
  lines.push('');
  lines.push('negative cases (nothing expected) that stayed quiet:');
  for (const sk of [...new Set([...Object.keys(r.negatives.dev), ...Object.keys(r.negatives.heldout)])].sort()) {
    const d = r.negatives.dev[sk];
    const h = r.negatives.heldout[sk];
    lines.push(
      `  ${sk.padEnd(28)} dev ${d ? `${d.quiet}/${d.cases}` : '–'}   held-out ${h ? `${h.quiet}/${h.cases}` : '–'}`,
    );
  }
  for (const s of errorsFor) {
    const bad = r.cases.filter((c) => c.split === s && (c.fp.length || c.fn.length));
    if (!bad.length) continue;
    lines.push('');
    lines.push(`${s} cases with errors:`);
    for (const c of bad)
      lines.push(
        `  ${c.id} [${c.subkind}]${c.fp.length ? `  false positives: ${c.fp.join('; ')}` : ''}${c.fn.length ? `  missed: ${c.fn.join('; ')}` : ''}`,
      );
  }
  return lines.join('\n');
}
