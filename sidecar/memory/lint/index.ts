/**
 * Memory lint: findings that explain themselves (issue 4). `lintEntries` is the pure core over the
 * input model in model.ts; `runLint` (run.ts) opens stores and probes the machine around it.
 * Rules and thresholds: docs/memory-lint.md.
 */
import * as path from 'node:path';
import type { LintFinding } from '../../protocol';
import type { LintEntry, LintFile, LintInput, LintOptions } from './model';
import {
  candidateJoin,
  classifyPair,
  JOIN_BUDGET,
  JOIN_BUDGET_FROM,
  MAX_SLOT_GROUP,
  prepare,
  sentences,
  slotCandidates,
  type JoinStats,
  type Prepared,
} from './pairs';
import { MAX_SEMANTIC_PAIRS_ENTRIES, semanticCandidates } from './semantic';
import { age, drift, entryTime, overBudget, stale, storeWarnings, untraceable, where } from './rules';
import { normalise, quote } from './text';

export type { LintInput, LintOptions, LintStore, LintFile, LintEntry, MachineFacts } from './model';

/** Default thresholds, tuned on the dev split of test/cases/memory-lint (see BENCHMARKS.md). */
export const DEFAULT_LINT_OPTIONS: LintOptions = {
  maxAgeDays: 90,
  candidateJaccard: 0.25,
  candidateContainment: 0.5,
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

/** Append `xs` to `out` one by one (no argument spread, so any length works). */
function append<T>(out: T[], xs: readonly T[]): void {
  for (const x of xs) out.push(x);
}

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
    return {
      order: [o, n],
      text: `${label(n)} is newer (${new Date(Math.max(ta, tb)).toISOString().slice(0, 10)} vs ${new Date(Math.min(ta, tb)).toISOString().slice(0, 10)}).`,
    };
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
  // append() not push(...xs): a spread of 200,000 findings overflows the call stack.
  for (const s of input.stores) {
    append(findings, storeWarnings(s));
    for (const f of s.files) {
      f.entries.forEach((entry, idx) => all.push({ store: s.store, file: f, idx, entry }));
      append(findings, overBudget(s.store, f));
      append(findings, drift(s.store, f));
      append(findings, untraceable(s.store, f));
      if (input.machine) append(findings, stale(s.store, f, input.machine));
      if (input.now !== undefined) append(findings, age(s.store, f, input.now, o.maxAgeDays));
    }
  }
  append(findings, pairFindings(all, o));
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => SEVERITY_ORDER[a.f.severity] - SEVERITY_ORDER[b.f.severity] || a.i - b.i)
    .map((x) => x.f);
}

/** Duplicate, near-duplicate and contradiction findings over all entries of all stores. */
function pairFindings(all: Located[], o: LintOptions): LintFinding[] {
  const out: LintFinding[] = [];
  const prepared: Prepared[] = all.map((l, i) => {
    const p = prepare(i, l.entry.text);
    if (l.entry.embedding) p.vec = l.entry.embedding;
    return p;
  });
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
    // Hermes's dict.fromkeys drops only byte-identical entries (after its strip()), not ones that differ in case or punctuation.
    const exactRepeats = new Set(items.map((l) => l.entry.text.trim())).size === 1;
    out.push({
      kind: 'duplicate',
      severity: 'warning',
      entries: items.map((l) => l.entry.id),
      stores: storesOf(items),
      message: `The same entry is stored ${items.length} times${crossStore ? ` in ${storesOf(items).length} stores` : files.length > 1 ? ` (${files.join(', ')})` : ''}: ${quote(items[0].entry.text, 80)}.${sameHermesFile ? (exactRepeats ? ' Hermes drops exact repeats when it loads memory, but every copy counts against the char budget.' : ' The copies differ only in case, spacing or punctuation, so Hermes keeps them all, and every copy counts against the char budget.') : ''}`,
      evidence: items.map((l) => `${label(l)}: ${quote(l.entry.text)}`),
      suggestion: 'Keep one copy and remove the others.',
    });
  }
  // Candidates from the prefix-filtered join; representatives of exact groups only once.
  const exactReps = prepared.filter((p) => !p.key || byKey.get(p.key)![0] === p.i);
  // Template groups (issue 12: a fact restated many times is one finding, not one per pair): entries
  // whose wording is the same once values are replaced by their type ("User prefers dark mode in
  // editor number #num"). Three or more become one finding with the count and the members; only the
  // first enters the pair search, so 100,000 such lines cost one pass, and none goes unreported.
  const byTemplate = new Map<string, number[]>();
  for (const p of exactReps) {
    const key = templateKey(p);
    if (!key) continue;
    const list = byTemplate.get(key);
    if (list) list.push(p.i);
    else byTemplate.set(key, [p.i]);
  }
  const grouped = new Set<number>();
  for (const [key, group] of byTemplate) {
    if (group.length < TEMPLATE_GROUP_MIN) continue;
    // One value position varies: one group. Several vary ("Deploy host 0 runs on port 8000", "... host 0
    // ... port 8003", "... host 1 ... port 8001"): the members that agree on all positions but one are a
    // group each (host 0's ports), so 1,000 such lines are a few findings, never 6,000 pairs or silence.
    for (const sub of templateSubgroups(group.map((i) => prepared[i].text))) {
      const members = sub.members.map((k) => group[k]);
      for (const i of members.slice(1)) grouped.add(i);
      append(out, [templateFinding(key, members, sub.position, all, prepared, byKey)]);
    }
  }
  const reps = exactReps.filter((p) => !grouped.has(p.i));
  // Each sentence of a multi-sentence entry joins the search too (same `i` as its entry), so one fact
  // of a long entry is compared with a short entry that states only it.
  const units: Prepared[] = [...reps];
  for (const p of reps) for (const sentence of sentences(p.text)) units.push(prepare(p.i, sentence));
  const joinStats: JoinStats = { skippedTokens: 0, examples: [], maxDf: 0 };
  // flat pairs [x0, y0, x1, y1, ...] of units (no array per pair: 100,000 entries give millions)
  const joined = candidateJoin(units, o.candidateJaccard, undefined, o.candidateContainment, joinStats);
  // and the pairs only the slot rules can decide (same single-valued label; a change from a value the other names)
  const U = units.length;
  const slotPairs = slotCandidates(units, joinStats);
  // and the pairs whose sentence vectors are close (semantic.ts): whole entries only (the first R units)
  const semantic = semanticCandidates(reps.map((p) => p.vec));
  for (const pair of semantic.pairs) slotPairs.push(pair);
  // pairs only related in meaning (below the model's candidate similarity) and found no other way: only
  // a near-duplicate by meaning may come of them, not a contradiction of the lexical rules
  const weakOnly = new Set<number>();
  if (slotPairs.length || semantic.weak.length) {
    const have = new Set<number>();
    for (let k = 0; k < joined.length; k += 2) have.add(joined[k] * U + joined[k + 1]);
    for (const [x, y] of slotPairs) {
      if (have.has(x * U + y)) continue;
      have.add(x * U + y);
      joined.push(x, y);
    }
    for (const [x, y] of semantic.weak) {
      if (have.has(x * U + y)) continue;
      have.add(x * U + y);
      weakOnly.add(x * U + y);
      joined.push(x, y);
    }
  }
  const parent = prepared.map((_, i) => i);
  const why = new Map<number, string>();
  const N = prepared.length;
  // Contradictions first, so that a near-duplicate cluster never joins two entries that contradict
  // each other (through a third entry similar to both): those are not to be merged.
  const verdicts: Array<{ a: Prepared; b: Prepared; v: ReturnType<typeof classifyPair> }> = [];
  // Whole entries first: a sentence pair only decides for two entries that have no verdict yet. Only
  // pairs of an entry with sentences can meet twice (as whole entries and as sentences), so only those
  // are remembered.
  const R = reps.length;
  const multi = new Uint8Array(N);
  for (let u = R; u < U; u++) multi[units[u].i] = 1;
  const seenPair = new Set<number>();
  for (const wholePass of [true, false]) {
    for (let k = 0; k < joined.length; k += 2) {
      const x = joined[k];
      const y = joined[k + 1];
      if (wholePass !== (x < R && y < R)) continue;
      const [a, b] = units[x].i < units[y].i ? [units[x], units[y]] : [units[y], units[x]];
      if (a.i === b.i) continue;
      const remember = multi[a.i] === 1 || multi[b.i] === 1;
      const key = a.i * N + b.i;
      if (remember && seenPair.has(key)) continue;
      const v = classifyPair(a, b, o);
      if (!v || (weakOnly.size && weakOnly.has(x * U + y) && v.kind !== 'near-duplicate')) continue;
      if (v.kind === 'distinct') {
        // two whole entries that disagree: none of their sentences is a repeat of the other's
        if (wholePass && remember) seenPair.add(key);
        continue;
      }
      if (remember) seenPair.add(key);
      verdicts.push({ a: prepared[a.i], b: prepared[b.i], v });
    }
  }
  const against = new Map<number, number[]>();
  for (const { a, b, v } of verdicts) {
    if (v?.kind !== 'contradiction') continue;
    (against.get(a.i) ?? against.set(a.i, []).get(a.i)!).push(b.i);
    (against.get(b.i) ?? against.set(b.i, []).get(b.i)!).push(a.i);
  }
  // Contradiction and superseded findings of one pair each, grouped below (groupPairFindings).
  const pairOut: PairFinding[] = [];
  const members = new Map<number, number[]>();
  const membersOf = (r: number): number[] => members.get(r) ?? [r];
  // Roots of clusters holding an entry that contradicts some entry: only those need the check below.
  const conflicted = new Uint8Array(N);
  for (const k of against.keys()) conflicted[k] = 1;
  for (const { a, b, v } of verdicts) {
    if (!v || v.kind === 'distinct') continue;
    if (v.kind === 'near-duplicate') {
      let ra = find(parent, a.i);
      let rb = find(parent, b.i);
      if (ra === rb) continue;
      // the smaller cluster joins the larger (a cluster of 9,000 copied into one of 2 is quadratic)
      if (membersOf(ra).length > membersOf(rb).length) [ra, rb] = [rb, ra];
      if (
        conflicted[ra] &&
        conflicted[rb] &&
        membersOf(ra).some((m) => (against.get(m) ?? []).some((c) => find(parent, c) === rb))
      )
        continue;
      parent[ra] = rb;
      if (conflicted[ra]) conflicted[rb] = 1;
      const into = membersOf(rb);
      append(into, membersOf(ra));
      members.set(rb, into);
      members.delete(ra);
      why.set(Math.min(a.i, b.i), v.why);
    } else {
      const la = all[a.i];
      const lb = all[b.i];
      const n = newer(la, lb);
      const ta = entryTime(la.entry);
      const tb = entryTime(lb.entry);
      const timed = ta !== undefined && tb !== undefined && ta !== tb;
      if (v.update || timed) {
        // A change over time: the newer entry wins by default; say how we know which one is newer.
        const byMarker = v.update ? (v.update.newer === 'a' ? la : lb) : undefined;
        const [old, cur] = byMarker ? (byMarker === la ? [lb, la] : [la, lb]) : n.order;
        const how = byMarker
          ? `${label(cur)} records the change ("${v.update!.marker}")${timed ? (entryTime(cur.entry)! > entryTime(old.entry)! ? ', and its time is later' : ', although its recorded time is earlier: check which is true now') : ''}.`
          : n.text;
        pairOut.push({
          a: a.i,
          b: b.i,
          kind: 'superseded',
          severity: 'warning',
          entries: [old.entry.id, cur.entry.id],
          stores: storesOf([old, cur]),
          message: `Superseded (${v.why}: ${v.detail}): ${quote(old.entry.text, 70)} is replaced by ${quote(cur.entry.text, 70)}. ${how}`,
          evidence: [
            `older: ${label(old)}: ${quote(old.entry.text)}`,
            `newer: ${label(cur)}: ${quote(cur.entry.text)}`,
            `${v.why}: ${v.detail}`,
            `how it knows which is newer: ${byMarker ? 'the wording of the change' : "the entries' times"}`,
          ],
          suggestion: `Keep the newer entry and remove the older one (or fold what is still true into the newer one).`,
        });
        continue;
      }
      const [first, second] = n.order;
      pairOut.push({
        a: a.i,
        b: b.i,
        kind: 'contradiction',
        severity: 'warning',
        entries: [first.entry.id, second.entry.id],
        stores: storesOf([first, second]),
        message: `Possible contradiction (${v.why}: ${v.detail}): ${quote(first.entry.text, 70)} vs ${quote(second.entry.text, 70)}. ${n.text}`,
        evidence: [
          `${label(first)}: ${quote(first.entry.text)}`,
          `${label(second)}: ${quote(second.entry.text)}`,
          `${v.why}: ${v.detail}`,
        ],
        suggestion: 'Keep the one that is true now and remove or correct the other.',
      });
    }
  }
  append(out, groupPairFindings(pairOut, all));
  // Near-duplicate clusters (exact copies of a member join their representative's cluster).
  const clusters = new Map<number, number[]>();
  for (const p of reps) {
    const r = find(parent, p.i);
    (clusters.get(r) ?? clusters.set(r, []).get(r)!).push(p.i);
  }
  const reasonsOf = new Map<number, Set<string>>();
  for (const [k, w] of why) {
    const r = find(parent, k);
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
      suggestion:
        storesOf(items).length > 1
          ? 'They are in different stores (agents): keep the fact where each agent needs it, but make the copies agree; within one store, merge repeats into one entry that keeps every detail.'
          : 'Merge them into one entry that keeps every detail, and remove the rest; repeated facts crowd out others and teach the model to skim memory.',
    });
  }
  if (joinStats.skippedTokens > 0) {
    out.push({
      kind: 'store',
      severity: 'info',
      entries: [],
      stores: storesOf(all),
      message: `Lint note: to stay fast, ${joinStats.skippedTokens} word${joinStats.skippedTokens === 1 ? '' : 's'} shared by more than ${joinStats.maxDf} entries each (${joinStats.examples.map((w) => `"${w}"`).join(', ')}) were not used to find similar entries; two entries that share only such words were not compared.`,
      evidence: [
        `${units.length} entries and sentences searched; words in more than ${joinStats.maxDf} of them skipped: ${joinStats.skippedTokens}`,
        ...(joinStats.loweredFrom
          ? [
              `the limit is ${joinStats.maxDf} entries per word instead of ${joinStats.loweredFrom}: above ${JOIN_BUDGET_FROM.toLocaleString('en-US')} entries and sentences the comparison keeps to about ${JOIN_BUDGET} candidate pairs per entry, so its time grows linearly with the store`,
            ]
          : []),
      ],
      suggestion:
        'Nothing to fix in memory; lint a smaller set of stores (one --store at a time) for a full comparison.',
    });
  }
  if (semantic.skipped > 0) {
    out.push({
      kind: 'store',
      severity: 'info',
      entries: [],
      stores: storesOf(all),
      message: `Lint note: to stay fast, ${semantic.skipped.toLocaleString('en-US')} entries with sentence vectors were not paired by meaning: more than ${MAX_SEMANTIC_PAIRS_ENTRIES.toLocaleString('en-US')} entries have vectors of one model, and comparing all their pairs would take too long; their vectors still judged the pairs found by wording.`,
      evidence: [
        `entries with vectors of one model: more than ${MAX_SEMANTIC_PAIRS_ENTRIES}; not paired by meaning: ${semantic.skipped}`,
      ],
      suggestion:
        'Nothing to fix in memory; lint a smaller set of stores (one --store at a time) for a full comparison.',
    });
  }
  const slots = joinStats.skippedSlots ?? 0;
  if (slots > 0) {
    out.push({
      kind: 'store',
      severity: 'info',
      entries: [],
      stores: storesOf(all),
      message: `Lint note: to stay fast, ${slots} label${slots === 1 ? '' : 's'}, changed-from word${slots === 1 ? '' : 's'} or choice famil${slots === 1 ? 'y' : 'ies'} held by more than ${MAX_SLOT_GROUP} entries each did not pair those entries for the slot rules; such entries were compared only when their wording is similar.`,
      evidence: [
        `labels, changed-from words, choice families (package manager, editor, …) and moves or homes shared by more than ${MAX_SLOT_GROUP} entries: ${slots}`,
      ],
      suggestion:
        'Nothing to fix in memory; lint a smaller set of stores (one --store at a time) for a full comparison.',
    });
  }
  return out;
}

/** A contradiction or superseded finding of one pair, with the pair (indices into the flat entry list). */
type PairFinding = LintFinding & { a: number; b: number };

/** Connected pairs of one kind with at least this many entries become one finding. */
const PAIR_GROUP_MIN = 3;

/**
 * One finding per group, not one per pair (issue 12): the contradiction pairs (and, apart, the
 * superseded pairs) that share entries form groups (connected components); a group of
 * PAIR_GROUP_MIN or more entries is one finding with the count, every member, and the first ten
 * pairs with their reasons as evidence; smaller groups keep their pair finding. Superseded groups
 * name the entries no other entry replaces (the newest).
 */
function groupPairFindings(pairs: PairFinding[], all: Located[]): LintFinding[] {
  const out: LintFinding[] = [];
  for (const kind of ['contradiction', 'superseded'] as const) {
    const mine = pairs.filter((p) => p.kind === kind);
    const parent = new Map<number, number>();
    const root = (x: number): number => {
      let r = x;
      while (parent.has(r) && parent.get(r) !== r) r = parent.get(r)!;
      parent.set(x, r);
      return r;
    };
    for (const p of mine) {
      if (!parent.has(p.a)) parent.set(p.a, p.a);
      if (!parent.has(p.b)) parent.set(p.b, p.b);
      const ra = root(p.a);
      const rb = root(p.b);
      if (ra !== rb) parent.set(ra, rb);
    }
    const groups = new Map<number, PairFinding[]>();
    for (const p of mine) {
      const r = root(p.a);
      (groups.get(r) ?? groups.set(r, []).get(r)!).push(p);
    }
    for (const g of groups.values()) {
      const ids = new Set<number>();
      for (const p of g) ids.add(p.a).add(p.b);
      if (ids.size < PAIR_GROUP_MIN) {
        for (const { a: _a, b: _b, ...f } of g) out.push(f);
        continue;
      }
      const items = byAge([...ids].sort((x, y) => x - y).map((i) => all[i]));
      const evidence = items.slice(0, 10).map((l) => `${label(l)}: ${quote(l.entry.text)}`);
      if (items.length > 10)
        evidence.push(`… and ${items.length - 10} more (all ${items.length} ids are in the finding's entries)`);
      for (const p of g.slice(0, 10)) evidence.push(`pair: ${p.message}`);
      if (g.length > 10) evidence.push(`… and ${g.length - 10} more pairs`);
      const first = quote(items[0].entry.text, 70);
      if (kind === 'superseded') {
        const replaced = new Set(g.map((p) => p.entries[0]));
        const newest = items.filter((l) => !replaced.has(l.entry.id));
        out.push({
          kind,
          severity: 'warning',
          entries: items.map((l) => l.entry.id),
          stores: storesOf(items),
          message: `${items.length} entries record changes of one thing (${g.length} replacements): ${first}. ${newest.length === 1 ? `The newest is ${label(newest[0])}: ${quote(newest[0].entry.text, 70)}.` : `${newest.length} of them are not replaced by another: ${newest.map((l) => label(l)).join(', ')}.`}`,
          evidence,
          suggestion:
            'Keep the newest entry (fold in what is still true from the others) and remove the replaced ones.',
        });
      } else {
        out.push({
          kind,
          severity: 'warning',
          entries: items.map((l) => l.entry.id),
          stores: storesOf(items),
          message: `${items.length} entries disagree about one thing (${g.length} conflicting pairs): ${first}.`,
          evidence,
          suggestion: 'Keep the one that is true now in one entry and remove or correct the others.',
        });
      }
    }
  }
  return out;
}

/** Groups of at least this many entries with one wording (values aside) become one finding. */
const TEMPLATE_GROUP_MIN = 3;

/** Value-like spans (URLs, e-mails, paths, numbers, versions, times) for template keys. */
const VALUE_SPAN =
  /\b(?:https?|ssh|git|ftp):\/\/\S+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:~|\.{1,2})?\/[^\s,;()]+|\bv?\d+(?:[.,:/-]\d+)*[a-z]{0,3}\b/g;

/**
 * The wording of an entry with its values replaced by "#" (every other character kept, case and
 * spacing folded); undefined when it has no value or fewer than two words.
 */
function templateKey(p: Prepared): string | undefined {
  if (!p.toks.some((t) => t.type !== 'word') || p.toks.filter((t) => t.type === 'word').length < 2) return undefined;
  return normalise(p.text)
    .replace(VALUE_SPAN, '#')
    .replace(/\s+/g, ' ')
    .replace(/[\s.!;,]+$/, '')
    .trim();
}

/**
 * The groups of texts of one template (same wording once values are "#") that state one thing: texts
 * that agree on every value position but one. When one position varies, that is every text; when
 * several vary, the texts are split by the values of the other positions, position by position (the
 * position that groups most texts first), each text in at most one group. Only groups of at least
 * TEMPLATE_GROUP_MIN texts; indices into `texts`, in input order.
 */
export function templateSubgroups(texts: string[]): Array<{ members: number[]; position: number }> {
  const rows = texts.map((t) => normalise(t).match(VALUE_SPAN) ?? []);
  let width = 0;
  for (const r of rows) width = Math.max(width, r.length);
  const varying: number[] = [];
  for (let k = 0; k < width; k++) if (new Set(rows.map((r) => r[k])).size > 1) varying.push(k);
  if (varying.length === 0) return [];
  if (varying.length === 1)
    return texts.length >= TEMPLATE_GROUP_MIN ? [{ members: texts.map((_, i) => i), position: varying[0] }] : [];
  // candidate groups per varying position: texts with the same values everywhere else
  const candidates: Array<{ members: number[]; position: number }> = [];
  for (const k of varying) {
    const by = new Map<string, number[]>();
    rows.forEach((r, i) => {
      const ctx = r.map((v, j) => (j === k ? '' : v)).join('\u0000');
      (by.get(ctx) ?? by.set(ctx, []).get(ctx)!).push(i);
    });
    for (const g of by.values())
      if (g.length >= TEMPLATE_GROUP_MIN && new Set(g.map((i) => rows[i][k])).size > 1)
        candidates.push({ members: g, position: k });
  }
  candidates.sort((x, y) => y.members.length - x.members.length);
  const taken = new Uint8Array(texts.length);
  const out: Array<{ members: number[]; position: number }> = [];
  for (const g of candidates) {
    const free = g.members.filter((i) => !taken[i]);
    if (free.length < TEMPLATE_GROUP_MIN) continue;
    for (const i of free) taken[i] = 1;
    out.push({ members: free, position: g.position });
  }
  return out;
}

/** One finding for a template group: near-duplicate when every member has its own value, contradiction when values repeat and disagree. */
function templateFinding(
  key: string,
  group: number[],
  position: number,
  all: Located[],
  prepared: Prepared[],
  byKey: Map<string, number[]>,
): LintFinding {
  const members = group.flatMap((i) => (prepared[i].key ? byKey.get(prepared[i].key)! : [i]));
  const items = byAge(members.map((i) => all[i]));
  // the value at the one position that varies (as written, case folded)
  const valueOf = (i: number): string => (normalise(prepared[i].text).match(VALUE_SPAN) ?? [])[position] ?? '';
  const counts = new Map<string, number>();
  for (const i of members) counts.set(valueOf(i), (counts.get(valueOf(i)) ?? 0) + 1);
  const repeated = [...counts.values()].some((c) => c > 1);
  const distinct = [...counts.entries()].sort((x, y) => y[1] - x[1]);
  const shown = distinct
    .slice(0, 5)
    .map(([v, c]) => (c > 1 ? `${v} (×${c})` : v))
    .join(', ');
  const first = quote(all[group[0]].entry.text, 70);
  const evidence = items.slice(0, 10).map((l) => `${label(l)}: ${quote(l.entry.text)}`);
  if (items.length > 10)
    evidence.push(`… and ${items.length - 10} more (all ${items.length} ids are in the finding's entries)`);
  evidence.push(`shared wording (values as their type): "${key}"`);
  const fixed = (normalise(prepared[group[0]].text).match(VALUE_SPAN) ?? []).filter((_, k) => k !== position);
  if (fixed.length) evidence.push(`the same in every member: ${fixed.join(', ')}; only value ${position + 1} differs`);
  evidence.push(`values: ${distinct.length} distinct${distinct.length > 5 ? `, most common: ${shown}` : `: ${shown}`}`);
  if (repeated && distinct.length > 1) {
    return {
      kind: 'contradiction',
      severity: 'warning',
      entries: items.map((l) => l.entry.id),
      stores: storesOf(items),
      message: `${items.length} entries state one thing with ${distinct.length} different values (${shown}${distinct.length > 5 ? ', …' : ''}): ${first}.`,
      evidence,
      suggestion: 'Keep the value that is true now in one entry and remove the others.',
    };
  }
  return {
    kind: 'near-duplicate',
    severity: 'warning',
    entries: items.map((l) => l.entry.id),
    stores: storesOf(items),
    message: `${items.length} entries repeat one wording and differ only in ${distinct.length === items.length ? 'a value each' : 'their values'} (${shown}${distinct.length > 5 ? ', …' : ''}): ${first}.`,
    evidence,
    suggestion:
      'If they restate one fact, keep one entry; if they are a list (tickets, hosts, ports), write it as one entry that lists the values.',
  };
}
