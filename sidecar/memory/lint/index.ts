/**
 * Memory lint: findings that explain themselves (issue 4). `lintEntries` is the pure core over the
 * input model in model.ts; `runLint` (run.ts) opens stores and probes the machine around it.
 * Rules and thresholds: docs/memory-lint.md.
 */
import * as path from 'node:path';
import type { LintFinding } from '../../protocol';
import type { LintEntry, LintFile, LintInput, LintOptions } from './model';
import { candidatePairs, classifyPair, prepare, type Prepared } from './pairs';
import { age, drift, entryTime, overBudget, stale, storeWarnings, untraceable, where } from './rules';
import { quote } from './text';

export type { LintInput, LintOptions, LintStore, LintFile, LintEntry, MachineFacts } from './model';

/** Default thresholds, tuned on the dev split of test/cases/memory-lint (see BENCHMARKS.md). */
export const DEFAULT_LINT_OPTIONS: LintOptions = {
  maxAgeDays: 90,
  candidateJaccard: 0.25,
  nearJaccard: 0.5,
  nearContainment: 0.85,
  nearTrigram: 0.6,
  shortChars: 80,
};

/** One entry with where it lives. */
interface Located {
  store: string;
  file: LintFile;
  idx: number;
  entry: LintEntry;
}

const SEVERITY_ORDER = { error: 0, warning: 1, info: 2 } as const;

function find(parent: number[], x: number): number {
  while (parent[x] !== x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/** Oldest first where times are known; entries without a time keep their input order, after those with one. */
function byAge(items: Located[]): Located[] {
  return [...items].sort((a, b) => (entryTime(a.entry) ?? Infinity) - (entryTime(b.entry) ?? Infinity));
}

function label(l: Located): string {
  return `${where(l.file, l.idx)}${l.store ? ` (${l.store})` : ''}`;
}

/** Which of two entries is newer, in words, and the pair ordered oldest first. */
function newer(a: Located, b: Located): { order: [Located, Located]; text: string } {
  const ta = entryTime(a.entry);
  const tb = entryTime(b.entry);
  if (ta !== undefined && tb !== undefined && ta !== tb) {
    const [o, n] = ta < tb ? [a, b] : [b, a];
    return { order: [o, n], text: `${label(n)} is newer (${new Date(Math.max(ta, tb)).toISOString().slice(0, 10)} vs ${new Date(Math.min(ta, tb)).toISOString().slice(0, 10)}).` };
  }
  if (a.file === b.file) {
    const [o, n] = a.idx < b.idx ? [a, b] : [b, a];
    return {
      order: [o, n],
      text: `The store keeps no time for these entries, so which is newer is unknown; ${where(n.file, n.idx)} comes later in the file${n.file.kind.startsWith('hermes') ? ' (Hermes appends new entries at the end, so it is probably newer)' : ''}.`,
    };
  }
  return { order: [a, b], text: 'Which one is newer is unknown: the store keeps no time for at least one of them.' };
}

function storesOf(items: Located[]): string[] {
  return [...new Set(items.map((l) => l.store))];
}

/**
 * Lint memory entries. Pure: reads only `input`.
 * @param input stores → files → entries (model.ts); `machine` for stale claims, `now` (ms) for age
 * @returns findings, errors first, then warnings, then info; each with evidence and a suggestion.
 *   Entry ids in a finding are ordered oldest first where the store keeps time.
 */
export function lintEntries(input: LintInput): LintFinding[] {
  const o: LintOptions = { ...DEFAULT_LINT_OPTIONS, ...(input.options ?? {}) };
  const all: Located[] = [];
  const findings: LintFinding[] = [];
  for (const s of input.stores) {
    findings.push(...storeWarnings(s));
    for (const f of s.files) {
      f.entries.forEach((entry, idx) => all.push({ store: s.store, file: f, idx, entry }));
      findings.push(...overBudget(s.store, f), ...drift(s.store, f), ...untraceable(s.store, f));
      if (input.machine) findings.push(...stale(s.store, f, input.machine));
      if (input.now !== undefined) findings.push(...age(s.store, f, input.now, o.maxAgeDays));
    }
  }
  findings.push(...pairFindings(all, o));
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => SEVERITY_ORDER[a.f.severity] - SEVERITY_ORDER[b.f.severity] || a.i - b.i)
    .map((x) => x.f);
}

/** Duplicate, near-duplicate and contradiction findings over all entries of all stores. */
function pairFindings(all: Located[], o: LintOptions): LintFinding[] {
  const out: LintFinding[] = [];
  const prepared: Prepared[] = all.map((l, i) => prepare(i, l.entry.text));
  // Exact duplicates: same folded text.
  const byKey = new Map<string, number[]>();
  prepared.forEach((p) => {
    if (!p.key) return;
    const list = byKey.get(p.key);
    if (list) list.push(p.i);
    else byKey.set(p.key, [p.i]);
  });
  for (const group of byKey.values()) {
    if (group.length < 2) continue;
    const items = byAge(group.map((i) => all[i]));
    const files = [...new Set(items.map((l) => path.basename(l.file.file)))];
    const crossStore = storesOf(items).length > 1;
    const sameHermesFile = files.length === 1 && items[0].file.kind.startsWith('hermes');
    out.push({
      kind: 'duplicate',
      severity: 'warning',
      entries: items.map((l) => l.entry.id),
      stores: storesOf(items),
      message: `The same entry is stored ${items.length} times${crossStore ? ` in ${storesOf(items).length} stores` : files.length > 1 ? ` (${files.join(', ')})` : ''}: ${quote(items[0].entry.text, 80)}.${sameHermesFile ? ' Hermes drops exact repeats when it loads memory, but every copy counts against the char budget.' : ''}`,
      evidence: items.map((l) => `${label(l)}: ${quote(l.entry.text)}`),
      suggestion: 'Keep one copy and remove the others.',
    });
  }
  // Candidates from the prefix-filtered join; representatives of exact groups only once.
  const reps = prepared.filter((p) => !p.key || byKey.get(p.key)![0] === p.i);
  const pairs = candidatePairs(reps, o.candidateJaccard);
  const parent = prepared.map((_, i) => i);
  const why = new Map<string, string>();
  for (const [x, y] of pairs) {
    const a = reps[x];
    const b = reps[y];
    const v = classifyPair(a, b, o);
    if (!v) continue;
    if (v.kind === 'near-duplicate') {
      parent[find(parent, a.i)] = find(parent, b.i);
      why.set(`${Math.min(a.i, b.i)}:${Math.max(a.i, b.i)}`, v.why);
    } else {
      const la = all[a.i];
      const lb = all[b.i];
      const n = newer(la, lb);
      const [first, second] = n.order;
      out.push({
        kind: 'contradiction',
        severity: 'warning',
        entries: [first.entry.id, second.entry.id],
        stores: storesOf([first, second]),
        message: `Possible contradiction (${v.why}: ${v.detail}): ${quote(first.entry.text, 70)} vs ${quote(second.entry.text, 70)}. ${n.text}`,
        evidence: [`${label(first)}: ${quote(first.entry.text)}`, `${label(second)}: ${quote(second.entry.text)}`, `${v.why}: ${v.detail}`],
        suggestion: 'Keep the one that is true now and remove or correct the other.',
      });
    }
  }
  // Near-duplicate clusters (exact copies of a member join their representative's cluster).
  const clusters = new Map<number, number[]>();
  for (const p of reps) {
    const r = find(parent, p.i);
    (clusters.get(r) ?? clusters.set(r, []).get(r)!).push(p.i);
  }
  const reasonsOf = new Map<number, Set<string>>();
  for (const [k, w] of why) {
    const r = find(parent, Number(k.slice(0, k.indexOf(':'))));
    const set = reasonsOf.get(r) ?? reasonsOf.set(r, new Set()).get(r)!;
    if (set.size < 3) set.add(w);
  }
  for (const [root, members] of clusters) {
    if (members.length < 2) continue;
    const withCopies = members.flatMap((i) => (prepared[i].key ? byKey.get(prepared[i].key)! : [i]));
    const items = byAge(withCopies.map((i) => all[i]));
    const reasons = reasonsOf.get(root) ?? new Set<string>();
    out.push({
      kind: 'near-duplicate',
      severity: 'warning',
      entries: items.map((l) => l.entry.id),
      stores: storesOf(items),
      message: `${items.length} entries say nearly the same thing${storesOf(items).length > 1 ? ` across ${storesOf(items).length} stores` : ''}: ${items
        .slice(0, 3)
        .map((l) => quote(l.entry.text, 60))
        .join(' / ')}${items.length > 3 ? ' / …' : ''}.`,
      evidence: [...items.map((l) => `${label(l)}: ${quote(l.entry.text)}`), ...[...reasons].slice(0, 3)],
      suggestion: 'Merge them into one entry that keeps every detail, and remove the rest; repeated facts crowd out others and teach the model to skim memory.',
    });
  }
  return out;
}
