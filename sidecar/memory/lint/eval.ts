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
import { exactKey } from './text';

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
    const doc = JSON.parse(await fs.readFile(path.join(dir, name), 'utf8')) as { cases: LintCase[] };
    for (const c of doc.cases) {
      if (ids.has(c.id)) throw new Error(`case id "${c.id}" repeats (in ${name})`);
      ids.add(c.id);
      out.push({ ...c, from: name });
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
        ...(o.traced !== undefined ? { provenance: { traced: o.traced, note: o.traced ? undefined : 'no memory tool call in state.db matches this text' } } : {}),
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
  return { stores: [...stores.values()], ...(c.machine ? { machine: c.machine } : {}), ...(c.now ? { now: Date.parse(c.now) } : {}) };
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
export function findingUnits(f: Pick<LintFinding, 'kind' | 'entries' | 'message' | 'stores'>, keyOf: (id: string) => string): string[] {
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
export function evaluate(cases: LintCase[], options?: Partial<LintOptions>): EvalReport {
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
    const input = caseInput(c);
    if (options) input.options = options;
    const keys = new Map<string, string>();
    const storeOf = new Map<string, string>();
    for (const s of input.stores) for (const f of s.files) for (const e of f.entries) {
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
          ? [`${x.kind} ${(c.files?.find((f) => (f.name ?? 'MEMORY.md') === x.file)?.store) ?? 'hermes:/h'} ${x.file}`]
          : findingUnits({ kind: x.kind, entries: x.entries ?? [], message: '' }, keyOf),
      ),
    );
    const split = splitOf(c.id);
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
  const kinds = [...new Set(Object.keys(r.scores.all))].sort((a, b) => (a === 'all' ? 1 : b === 'all' ? -1 : a < b ? -1 : 1));
  for (const k of kinds) {
    for (const s of ['dev', 'heldout'] as const) {
      const sc = r.scores[s][k] ?? { tp: 0, fp: 0, fn: 0 };
      const { precision, recall } = pr(sc);
      lines.push(`${k.padEnd(15)} ${s.padEnd(9)} ${precision.toFixed(3).padStart(9)}  ${recall.toFixed(3).padStart(6)}  ${String(sc.tp).padStart(3)} ${String(sc.fp).padStart(3)} ${String(sc.fn).padStart(3)}`);
    }
  }
  const bad = r.cases.filter((c) => c.fp.length || c.fn.length);
  if (bad.length) {
    lines.push('');
    lines.push('cases with errors:');
    for (const c of bad) {
      lines.push(`  ${c.id} [${c.split}]${c.fp.length ? `  false positives: ${c.fp.join('; ')}` : ''}${c.fn.length ? `  missed: ${c.fn.join('; ')}` : ''}`);
    }
  }
  return lines.join('\n');
}
