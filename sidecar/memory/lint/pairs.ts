/**
 * Pair rules of the memory lint: exact duplicates, near-duplicates and contradictions.
 *
 * Candidate search never compares all pairs. Each entry gets a masked token set (values, negations,
 * antonyms and exclusive alternatives masked, see text.ts maskKey), so a statement and its
 * contradiction have the same set. A prefix-filtered similarity join (tokens ordered by rarity;
 * each set indexes only its first |x| - ceil(t·|x|) + 1 tokens, which any pair with Jaccard >= t
 * must share) yields the candidate pairs with masked Jaccard >= `candidateJaccard`; exact duplicates
 * come from a hash of the folded text. Each candidate is then classified by `classifyPair`.
 */
import { choiceConflict, cjkAntonyms, mentions, sameZone, type Mention } from './choices';
import type { LintOptions } from './model';
import { relation, specificity } from './lexicon';
import {
  aboutThePast,
  frameDiff,
  frameHunks,
  frameTokens,
  labelValues,
  updateMarker,
  type LabelValue,
  type UpdateMarker,
} from './slots';
import { foreignNegation, languagesNamed, sameLanguagesNamed } from './languages';
import { englishLike, similarity, thresholdsFor, type Vec } from './semantic';
import {
  align,
  anchors,
  normOf,
  otherScript,
  polarity,
  polarityDiff,
  scriptMix,
  type Alignment,
  type SoftEntry,
} from './soft';
import {
  areAlternatives,
  areAntonyms,
  containment,
  exactKey,
  FUNCTIONAL,
  incompatibleGroup,
  isIncompatWord,
  jaccard,
  maskKey,
  NEGATIONS,
  shingles,
  tokens,
  trigrams,
  type Token,
} from './text';

/**
 * Words that name the implied subject of most entries ("User's staging server ..." = "Staging
 * server ..."): not content words, so one side having them does not make it a different fact.
 */
const SUBJECT_WORDS = new Set(['user']);

/** An entry prepared for pair rules. */
export interface Prepared {
  /** Index into the flat entry list. */
  i: number;
  text: string;
  key: string;
  toks: Token[];
  /** Words (canonical, no negations). */
  words: Set<string>;
  /** `words` without subject words ("user"): what near-duplicate measures and "extra words" compare. */
  content: Set<string>;
  /** Values by literal, with their type. */
  values: Map<string, Token['type']>;
  negated: boolean;
  masked: string[];
  /** Word shingles (unigrams + bigrams), computed on first use (see shinglesOf). */
  shingles?: Set<string>;
  tri?: Set<string>;
  /** The update marker (slots.ts), computed on first use; null = none. */
  marker?: UpdateMarker | null;
  /** "Label: value" statements (slots.ts), computed on first use. */
  labels?: LabelValue[];
  /** Polarity of the content words (soft.ts), computed on first use. */
  pol?: Map<string, number>;
  negSubject?: Map<string, string[]>;
  script?: number;
  items?: SoftEntry['items'];
  anchors?: Set<string>;
  /** Words of the incompatible-claims lexicon (incompatWords), computed on first use. */
  incompat?: string[];
  /** The tokens frameDiff aligns, and their set (frameOf), computed on first use. */
  frame?: Token[];
  frameSet?: Set<string>;
  /** The entry's sentence vector (LintEntry.embedding), for whole entries only (semantic.ts). */
  vec?: Vec;
  /** Mentions of members of a family of exclusive alternatives (choices.ts), computed on first use. */
  mentions?: Mention[];
  /** The value-like tokens and their indices (valuesSwapped), computed on first use. */
  valueLike?: Array<[Token, number]>;
}

/** Prepare one entry text. */
export function prepare(i: number, text: string): Prepared {
  const toks = tokens(text);
  const words = new Set<string>();
  const values = new Map<string, Token['type']>();
  let negated = false;
  toks.forEach((t, k) => {
    if (t.type === 'word') {
      // "not 22" corrects a value; it does not negate the statement
      if (NEGATIONS.has(t.t)) negated ||= !toks.slice(k + 1, k + 3).some((n) => n.type !== 'word');
      else words.add(t.t);
    } else if (!(k > 0 && toks[k - 1].type === 'word' && NEGATIONS.has(toks[k - 1].t))) values.set(t.t, t.type);
    // (a value right after a negation, "port 2222 (not 22)", is a correction, not a claim)
  });
  const masked = [...new Set(toks.map(maskKey).filter((k): k is string => k !== null))];
  const content = new Set([...words].filter((w) => !SUBJECT_WORDS.has(w)));
  return { i, text, key: exactKey(text), toks, words, content, values, negated, masked };
}

/** The word shingles of a prepared entry (negations left out), computed once. */
function shinglesOf(p: Prepared): Set<string> {
  p.shingles ??= shingles(p.toks.filter((t) => !(t.type === 'word' && NEGATIONS.has(t.t))).map((t) => t.t));
  return p.shingles;
}

/**
 * The sentences of a multi-sentence entry ("Name: Dana. Timezone Europe/Berlin. Prefers concise
 * answers."), for comparing one fact of it with another entry; [] for a single sentence. Splits
 * after . ! ? ; followed by a space.
 */
export function sentences(text: string): string[] {
  const parts = text
    .split(/(?<=[.!?;])\s+(?=\S)/)
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
  return parts.length > 1 ? parts : [];
}

/** The words next to a value: [before, after]. */
function slot(p: Prepared, v: string): [string | undefined, string | undefined] {
  const k = p.toks.findIndex((t) => t.type !== 'word' && t.t === v);
  const before = p.toks
    .slice(0, k)
    .reverse()
    .find((t) => t.type === 'word')?.t;
  const after = p.toks.slice(k + 1).find((t) => t.type === 'word')?.t;
  return [before, after];
}
function sameSlot(a: Prepared, va: string, b: Prepared, vb: string): boolean {
  const [ab, aa] = slot(a, va);
  const [bb, ba] = slot(b, vb);
  return (ab !== undefined && ab === bb) || (aa !== undefined && aa === ba) || (ab === undefined && bb === undefined);
}

/** Whether word `w` comes within two tokens after a single-valued attribute word ("editor is Vim"). */
function valueOfAttribute(p: Prepared, w: string): boolean {
  const k = p.toks.findIndex((t) => t.type === 'word' && t.t === w);
  for (let d = 1; d <= 2 && k - d >= 0; d++) if (FUNCTIONAL.has(p.toks[k - d].t)) return true;
  return false;
}

/** Words that give the two sides of a statement different roles: X over/than/instead of/not Y, from X to Y. */
const RELATION =
  /\b(over|than|instead|rather|not|never|no|vs|versus|before|after|from|to|into|replaced?|replaces|n't)\b/i;

/**
 * Two words that changed places: the words both entries share come in the same order except for one
 * transposition of x and y. `gaps`: the text between them in each entry (from the end of the first
 * word to the start of the second). Only the first occurrence of a shared word counts.
 */
export function transposition(a: Prepared, b: Prepared): { x: string; y: string; gaps: [string, string] } | undefined {
  const seq = (p: Prepared, other: Prepared): Token[] => {
    const seen = new Set<string>();
    const out: Token[] = [];
    for (const t of p.toks) {
      if (t.type !== 'word' || NEGATIONS.has(t.t) || !other.words.has(t.t) || seen.has(t.t)) continue;
      seen.add(t.t);
      out.push(t);
    }
    return out;
  };
  const sa = seq(a, b);
  const sb = seq(b, a);
  if (sa.length < 2 || sa.length !== sb.length) return undefined;
  const diffAt = sa.map((t, i) => (t.t !== sb[i].t ? i : -1)).filter((i) => i >= 0);
  if (diffAt.length !== 2) return undefined;
  const [i, j] = diffAt;
  if (sa[i].t !== sb[j].t || sa[j].t !== sb[i].t) return undefined;
  const gap = (p: Prepared, x: Token, y: Token): string =>
    normOf(p)
      .slice((x.at ?? 0) + x.t.length, y.at ?? 0)
      .replace(/^\S*/, '')
      .trim();
  // The words as written ("TypeScript", not the canonical "ts"), for messages.
  const surface = (t: Token): string => /^[^\s,.;:!?()]+/.exec(normOf(a).slice(t.at ?? 0))?.[0] ?? t.t;
  return { x: surface(sa[i]), y: surface(sa[j]), gaps: [gap(a, sa[i], sa[j]), gap(b, sb[i], sb[j])] };
}

/**
 * Roles swapped: a transposition whose two words are joined by a relation word in both entries (at
 * most three words between them): "TypeScript over JavaScript" vs "JavaScript over TypeScript",
 * "pnpm, not npm" vs "npm, not pnpm", "from WordPress to Hugo" vs "from Hugo to WordPress".
 */
export function swappedRoles(a: Prepared, b: Prepared): [string, string] | undefined {
  const t = transposition(a, b);
  const joined = (gap: string): boolean => gap.split(/\s+/).filter(Boolean).length <= 3 && RELATION.test(gap);
  return t && joined(t.gaps[0]) && joined(t.gaps[1]) ? [t.x, t.y] : undefined;
}

/**
 * The tokens of an entry that valuesSwapped treats as values (numbers, versions, IPs, paths; or
 * name-like words with digits: "#ef4444"), with their index in `toks`, in order; computed once.
 */
function valueLikeOf(p: Prepared): Array<[Token, number]> {
  if (p.valueLike) return p.valueLike;
  const out: Array<[Token, number]> = [];
  p.toks.forEach((t, k) => {
    if ((t.type !== 'word' && t.type !== 'date') || (t.type === 'word' && !t.cjk && t.t.length >= 3 && /\d/.test(t.t)))
      out.push([t, k]);
  });
  p.valueLike = out;
  return out;
}

/**
 * Two values (numbers, versions, IPs, paths; or name-like words with digits: "#ef4444") that both
 * entries hold and that change places, with a word of the entry between them in each (the key they
 * belong to): [x, y, the words between them in the first entry]. Values that change places across
 * only stop words or a list ("ports 8080 and 9090" / "9090 and 8080") say the same.
 */
export function valuesSwapped(a: Prepared, b: Prepared): [string, string, string] | undefined {
  // (fewer than two value-like tokens on a side: nothing can change places; most pairs stop here)
  const la = valueLikeOf(a);
  const lb = valueLikeOf(b);
  if (la.length < 2 || lb.length < 2) return undefined;
  const seq = (list: Array<[Token, number]>, other: Prepared): Array<[Token, number]> => {
    const seen = new Set<string>();
    const out: Array<[Token, number]> = [];
    for (const [t, k] of list) {
      if (seen.has(t.t) || !frameSetOf(other).has(t.t)) continue;
      seen.add(t.t);
      out.push([t, k]);
    }
    return out;
  };
  const sa = seq(la, b);
  const sb = seq(lb, a);
  if (sa.length < 2 || sa.length !== sb.length) return undefined;
  const at = sa.map(([t], i) => (t.t !== sb[i][0].t ? i : -1)).filter((i) => i >= 0);
  if (at.length !== 2) return undefined;
  const [i, j] = at;
  if (sa[i][0].t !== sb[j][0].t || sa[j][0].t !== sb[i][0].t) return undefined;
  const between = (p: Prepared, x: number, y: number): Token[] =>
    p.toks.slice(x + 1, y).filter((t) => t.type === 'word' && !NEGATIONS.has(t.t) && !RELATION.test(t.t));
  const ga = between(a, sa[i][1], sa[j][1]);
  const gb = between(b, sb[i][1], sb[j][1]);
  if (!ga.length || !gb.length) return undefined;
  return [sa[i][0].t, sa[j][0].t, ga.map((t) => t.t).join(' ')];
}

/** The content words both entries open with (stemmed), up to the first difference or value. */
function sameOpening(a: Prepared, b: Prepared): string[] {
  const lead = (p: Prepared): string[] => {
    const out: string[] = [];
    for (const t of p.toks) {
      if (t.type !== 'word') break;
      if (!SUBJECT_WORDS.has(t.t)) out.push(t.t);
    }
    return out;
  };
  const la = lead(a);
  const lb = lead(b);
  let k = 0;
  while (k < la.length && k < lb.length && la[k] === lb[k]) k++;
  return la.slice(0, k);
}

/** What classifyPair decided. */
export type PairVerdict =
  | { kind: 'near-duplicate'; score: number; why: string }
  /**
   * Two whole entries that disagree somewhere, though not as a finding the lint can explain (a word
   * negated in one only, a value changed in its slot): no finding, and no sentence of one may be
   * called a repeat of a sentence of the other.
   */
  | { kind: 'distinct'; why: string }
  | {
      kind: 'contradiction';
      why: string;
      detail: string;
      /** A change over time: which side says it changed (the newer one), and the words that say so. */
      update?: { newer: 'a' | 'b'; marker: string };
    }
  | undefined;

const NONE: string[] = [];

/** The keys of `a` that `b` lacks. */
function diffKeys(a: Map<string, unknown>, b: Map<string, unknown>): string[] {
  let out: string[] | undefined;
  for (const k of a.keys()) if (!b.has(k)) (out ??= []).push(k);
  return out ?? NONE;
}

/** The words of an entry that are claim or conflict words of the incompatible-claims lexicon, computed once. */
function incompatWords(p: Prepared): string[] {
  if (!p.incompat) {
    let out: string[] | undefined;
    for (const w of p.words) if (isIncompatWord(w)) (out ??= []).push(w);
    p.incompat = out ?? NONE;
  }
  return p.incompat;
}

function diff(a: Set<string>, b: Set<string>): string[] {
  const out: string[] = [];
  for (const x of a) if (!b.has(x)) out.push(x);
  return out;
}

/** Whether a and b differ by at most one insertion, deletion or substitution (no allocation). */
export function withinOneEdit(a: string, b: string): boolean {
  if (a === b) return true;
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > 1) return false;
  let i = 0;
  while (i < la && i < lb && a[i] === b[i]) i++;
  if (la === lb) return a.slice(i + 1) === b.slice(i + 1);
  return la > lb ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

/** Drop words of `a` and `b` that are the same word up to a typo (edit distance 1 for words of 5+ letters). */
function dropTypos(a: string[], b: string[]): [string[], string[]] {
  const restB = [...b];
  const restA: string[] = [];
  for (const x of a) {
    const j = x.length >= 5 ? restB.findIndex((y) => y.length >= 5 && withinOneEdit(x, y)) : -1;
    if (j >= 0) restB.splice(j, 1);
    else restA.push(x);
  }
  return [restA, restB];
}

/**
 * Classify a candidate pair (not exact duplicates). Contradiction wins over near-duplicate: two
 * texts that agree except for a value, a negation, an antonym or an exclusive alternative say
 * different things, however similar they look.
 */
export function classifyPair(a: Prepared, b: Prepared, o: LintOptions): PairVerdict {
  const v = classifyByRules(a, b, o);
  if (v?.kind === 'contradiction' && !v.update) {
    // a contradiction where one side says what holds now ("as of June", "these days", "ora", "现在"):
    // that side is the newer one (superseded, the newer entry wins)
    const ma = markerOf(a);
    const mb = markerOf(b);
    if (!!ma !== !!mb && !(ma ?? mb)!.retires)
      return { ...v, update: { newer: ma ? 'a' : 'b', marker: (ma ?? mb)!.phrase } };
  }
  return v === undefined && a.vec && b.vec ? semanticDuplicate(a, b) : v;
}

/**
 * Near-duplicate by meaning (semantic.ts), for a pair no rule decided: the two entries' vectors (one
 * model) have cosine similarity >= the model's `duplicate` threshold, and nothing the lexical rules
 * read differs — no value of one type on each side, no word negated in one and asserted in the
 * other, no exclusive alternatives or antonyms, no change marker on one side only, and not the same
 * frame with words swapped one for one (a scope: "for previews … staging" / "for releases …
 * production"). An English-only model judges only entries mostly in the Latin script.
 */
export function semanticDuplicate(a: Prepared, b: Prepared): PairVerdict {
  const sim = similarity(a.vec, b.vec);
  if (sim === undefined) return undefined;
  const th = thresholdsFor(a.vec!.model);
  if (sim < th.related) return undefined;
  if (th.englishOnly && (!englishLike(a.text) || !englishLike(b.text))) return undefined;
  // (a path counts by its last segment: "~/.hermes" and "/root/.hermes" name one place in two forms)
  const last = (v: string): string => v.replace(/\/+$/, '').slice(v.replace(/\/+$/, '').lastIndexOf('/') + 1);
  const lastOf = (p: Prepared): Set<string> => {
    const out = new Set<string>();
    for (const [v, t] of p.values) if (t === 'path') out.add(last(v));
    return out;
  };
  const typesOf = (p: Prepared, other: Prepared): Set<string> => {
    const out = new Set<string>();
    const otherLast = lastOf(other);
    for (const [v, t] of p.values) {
      // (dates count here: "appointment on 2026-01-05" / "… on 2026-02-10" are two events, not one fact)
      if (other.values.has(v) || (t === 'path' && otherLast.has(last(v)))) continue;
      out.add(t === 'ver' ? 'num' : t);
    }
    return out;
  };
  const ta = typesOf(a, b);
  for (const t of typesOf(b, a)) if (ta.has(t)) return undefined;
  // a word negated in one and asserted in the other, unless far outnumbered by the words both agree on
  const pd = polarityDiff(a, b);
  if (pd.conflict.length && pd.conflict.length * 3 >= pd.agree + pd.bothNegated.length) return undefined;
  const wa = diff(a.content, b.content);
  const wb = diff(b.content, a.content);
  if (wa.some((x) => wb.some((y) => areAlternatives(x, y) || areAntonyms(x, y)))) return undefined;
  if (!!changeMarkerOf(a) !== !!changeMarkerOf(b)) return undefined;
  // the same frame with a few words swapped for others (none related): a scope, another thing
  const h = wa.length && wb.length ? frameHunks(frameOf(a), frameOf(b)) : undefined;
  if (
    h &&
    h.hunks.length &&
    h.hunks.every((x) => x.a.length && x.b.length && !x.a.some((s) => x.b.some((t) => relation(s.t, t.t)))) &&
    h.frame.length >= Math.max(sumLen(h.hunks, 'a'), sumLen(h.hunks, 'b'))
  )
    return undefined;
  // two facts about one topic are close in meaning too ("project is a TypeScript extension" / "project
  // uses tabs"): below `strong`, some of the words must align as well
  const al = align(a, b);
  if (sim < th.strong && (al.score < SEMANTIC_ALIGN || Math.min(al.matchedA, al.matchedB) < 2)) return undefined;
  // related in meaning, not close: the words must align as a rewording's do (half the weight, three
  // words a side), with no word negated in one and asserted in the other
  if (
    sim < th.duplicate &&
    (al.score < SEMANTIC_ALIGN_RELATED || Math.min(al.matchedA, al.matchedB) < 3 || pd.conflict.length > 0)
  )
    return undefined;
  return {
    kind: 'near-duplicate',
    score: sim,
    why: `sentence similarity ${sim.toFixed(2)} (${th.label}) and no value, negation or scope differs${sim < th.strong ? ` (words aligned: weighted overlap ${al.score.toFixed(2)}, ${al.matchedA} and ${al.matchedB} words matched)` : ''}`,
  };
}

function sumLen(hunks: Array<{ a: unknown[]; b: unknown[] }>, side: 'a' | 'b'): number {
  let n = 0;
  for (const x of hunks) n += x[side].length;
  return n;
}

/** Below a model's `strong` similarity, a near-duplicate by meaning needs this weighted word overlap too (soft.ts align). */
export const SEMANTIC_ALIGN = 0.3;
/** Between a model's `related` and `duplicate` similarity, the weighted word overlap needed (and three words matched a side). */
export const SEMANTIC_ALIGN_RELATED = 0.5;

/** The lexical pair rules (classifyPair without the comparison by meaning). */
function classifyByRules(a: Prepared, b: Prepared, o: LintOptions): PairVerdict {
  const [wa, wb] = dropTypos(diff(a.content, b.content), diff(b.content, a.content));
  // (this runs on millions of candidate pairs in a large store: counts and empty constants, few arrays)
  let sharedN = 0;
  for (const w of a.words) if (b.words.has(w)) sharedN++;
  const va = a.values.size ? diffKeys(a.values, b.values) : NONE;
  const vb = b.values.size ? diffKeys(b.values, a.values) : NONE;
  // Values of the same type that differ (dates are events, not attributes: they do not conflict).
  const typed = (vs: string[], m: Map<string, Token['type']>): Map<string, string[]> => {
    const r = new Map<string, string[]>();
    for (const v of vs) {
      const t = m.get(v)!;
      if (t === 'date') continue;
      const k = t === 'ver' ? 'num' : t;
      r.set(k, [...(r.get(k) ?? []), v]);
    }
    return r;
  };
  const conflictingValues: Array<[string, string]> = [];
  if (va.length && vb.length) {
    const ta = typed(va, a.values);
    const tb = typed(vb, b.values);
    for (const [k, xs] of ta) {
      const ys = tb.get(k);
      if (ys) conflictingValues.push([xs.join(', '), ys.join(', ')]);
    }
  }
  const sameSubject = wa.length === 0 || wb.length === 0; // one side only adds words (or none)
  const onlyA = va.length ? va.filter((v) => a.values.get(v) !== 'date') : NONE;
  const onlyB = vb.length ? vb.filter((v) => b.values.get(v) !== 'date') : NONE;
  // Exactly one value swapped, in the same slot (same word before or after it).
  const oneValueEach = onlyA.length === 1 && onlyB.length === 1 && sameSlot(a, onlyA[0], b, onlyB[0]);

  // 1. lexicon of incompatible claims (vegetarian vs steak), with a shared subject word
  if (sharedN >= 1) {
    for (const x of incompatWords(a)) {
      for (const y of incompatWords(b)) {
        const g = incompatibleGroup(x, y);
        if (g && !(a.words.has(y) || b.words.has(x))) {
          return { kind: 'contradiction', why: `incompatible claims (${g})`, detail: `"${x}" vs "${y}"` };
        }
      }
    }
  }
  // 2. the same value slot with different values
  if (conflictingValues.length > 0) {
    // Exactly one value swapped: several at once is another record (runbook step 1 vs step 2).
    if (oneValueEach && sameSubject && sharedN >= 1 && !(wa.length + wb.length > 0 && sharedN < 2)) {
      const [x, y] = conflictingValues[0];
      return { kind: 'contradiction', why: 'same subject, different value', detail: `${x} vs ${y}` };
    }
    // A change over time names its new value ("proxy moved to 127.0.0.1:7890"), and an edited entry may
    // change several values in one place ("cron 17:00/17:10" → "cron 20:30/20:40").
    const change = changeOverTime(a, b);
    if (change) return change;
    const hunk = valuesHunk(a, b);
    if (hunk) return hunk;
    const edited = editedEntry(a, b);
    if (edited) return edited;
    if (
      onlyA.some((x) =>
        onlyB.some((y) => typed([x], a.values).size && sameSlot(a, x, b, y) && a.values.get(x) === b.values.get(y)),
      )
    ) {
      return { kind: 'distinct', why: 'a value differs in the same slot' };
    }
    return undefined; // different subjects with different values: unrelated facts
  }
  // A value on each side that the other lacks, of different types, several words differing, no negation,
  // no change marker, no label on one side: of the rules below only the one-span rule and the polarity
  // rule could still apply (every other needs fewer differing words, a negation, a marker, labels, or no
  // values on one side). Most candidate pairs of a large store are of this kind (one shared name:
  // "Staging host for X is 10.0.0.1" / "The X service listens on port 8080"), so they end here.
  if (
    va.length > 0 &&
    vb.length > 0 &&
    wa.length + wb.length > 2 &&
    a.negated === b.negated &&
    !changeMarkerOf(a) &&
    !changeMarkerOf(b) &&
    (!labelsOf(a).length || !labelsOf(b).length) &&
    !scriptMix(a, b) &&
    polarityDiff(a, b).conflict.length === 0
  ) {
    return spanVerdict(a, b, wa, wb, overlap(a, b).shared);
  }
  // 3. a negated restatement
  const negExtra = a.negated ? wa.length : wb.length;
  const otherExtra = a.negated ? wb.length : wa.length;
  if (a.negated !== b.negated && sharedN >= 1 && (wa.length + wb.length <= 1 || (negExtra === 0 && otherExtra <= 2))) {
    const neg = a.negated ? a : b;
    const w = neg.toks.find((t) => t.type === 'word' && NEGATIONS.has(t.t))?.t ?? 'not';
    return { kind: 'contradiction', why: 'negated restatement', detail: `one says "${w}"` };
  }
  // 4. one word swapped for its antonym or an exclusive alternative, or a single-valued attribute
  if (wa.length === 1 && wb.length === 1 && sharedN >= 1 && !sameZone(wa[0], wb[0])) {
    const [x] = wa;
    const [y] = wb;
    if (areAntonyms(x, y) && a.negated === b.negated)
      return { kind: 'contradiction', why: 'antonyms', detail: `"${x}" vs "${y}"` };
    if (areAlternatives(x, y) && a.negated === b.negated)
      return { kind: 'contradiction', why: 'exclusive alternatives', detail: `"${x}" vs "${y}"` };
    if (
      valueOfAttribute(a, x) &&
      valueOfAttribute(b, y) &&
      a.negated === b.negated &&
      va.length === 0 &&
      vb.length === 0
    ) {
      return { kind: 'contradiction', why: 'single-valued attribute', detail: `"${x}" vs "${y}"` };
    }
  }
  // 5. the same words with two of them swapped around a relation ("TypeScript over JavaScript" vs
  //    "JavaScript over TypeScript", "pnpm, not npm" vs "npm, not pnpm"): opposite statements
  const swap = wa.length + wb.length <= 2 ? swappedRoles(a, b) : undefined; // mostly the same words
  if (swap)
    return { kind: 'contradiction', why: 'roles swapped', detail: `"${swap[0]}" and "${swap[1]}" change places` };
  //    and two values that change places across the words they belong to ("prod 10.0.0.1, staging
  //    10.0.0.2" / "prod 10.0.0.2, staging 10.0.0.1"; "红涨#ef4444 绿跌#22c55e" / "绿涨#22c55e 红跌#ef4444")
  const vswap = wa.length <= 2 && wb.length <= 2 ? valuesSwapped(a, b) : undefined;
  if (vswap)
    return {
      kind: 'contradiction',
      why: 'values swapped',
      detail: `"${vswap[0]}" and "${vswap[1]}" change places across "${vswap[2]}"`,
    };
  // 6. the slot model (slots.ts): an update over time, a "Label: value" with another value, or the
  //    same frame with one short span swapped for another value of the attribute
  const slot = slotVerdict(a, b, wa, wb);
  if (slot) return slot;
  // 6b. different choices in one family of exclusive alternatives, in any sentence shape (choices.ts):
  //     "Prefers pnpm over npm" / "Uses npm for everything"; "Neovim is my editor" / "Editor: VS Code"
  const choice = choiceVerdict(a, b, wa, wb);
  if (choice) return choice;
  // 6b'. the same "Label:" with opposite values ("投资: 黄金…中长线" / "投资: 黄金短线交易"; "Replies: short" / "Replies: long")
  const opp = labelOpposites(a, b);
  if (opp) return opp;
  // 6c. one name swapped for another while the other entry only adds details ("联通宽带，翻墙用途GPT+视频，…"
  //     / "电信宽带，翻墙用途GPT+视频。")
  const sub = nameSwappedWithAdditions(a, b);
  if (sub) return sub;
  // 7. negated in one, asserted in the other, clause by clause (soft.ts polarity): "No iOS devices (no
  //    iPhone/iPad)" / "... and an iPhone"; "Never write to any database" / "Database writes are fine"
  let aligned: Alignment | undefined;
  const al = (): Alignment => (aligned ??= align(a, b));
  // (negations are known in English and Chinese: across two scripts, "όχι password" is not read as one)
  const pd = scriptMix(a, b) ? { conflict: [], bothNegated: [], agree: 0 } : polarityDiff(a, b);
  const head = pd.conflict[0]?.split('~')[0];
  if (
    (pd.conflict.length >= 2 &&
      weight(pd.conflict) >= 1.5 &&
      pd.conflict.length > pd.agree + pd.bothNegated.length &&
      al().contain >= 0.4) ||
    (pd.conflict.length === 1 && specificity(head) === 1 && pd.agree >= 2 && al().contain >= 0.9)
  ) {
    return {
      kind: 'contradiction',
      why: 'negated in one, asserted in the other',
      detail: `${pd.conflict.map((w) => `"${w}"`).join(', ')} ${pd.conflict.length === 1 ? 'is' : 'are'} negated in one entry and not in the other`,
    };
  }
  // Two words that change places across other words are not the same statement ("Alice does not review
  // code for the billing team" / "Billing does not review code for the Alice team"); across only stop
  // words and list words ("TypeScript and Go" / "Go and TypeScript", "SSH listens" / "listens for SSH") they are.
  if (wa.length + wb.length <= 2) {
    const t = transposition(a, b);
    if (t && t.gaps.some((g) => tokens(g).length > 0)) return undefined;
  }
  // Negated on one side only: a restatement only when the same words are negated on both sides
  // ("..., never scripts on the host" / "... over local host-based scripts"). Across two scripts, a
  // negation word of the other language counts too ("never password" / "όχι password": languages.ts).
  const mixed = a.negated !== b.negated && scriptMix(a, b) !== undefined;
  const negA = a.negated || (mixed && foreignNegation(a.text) !== undefined);
  const negB = b.negated || (mixed && foreignNegation(b.text) !== undefined);
  if (negA !== negB && !(pd.conflict.length === 0 && pd.bothNegated.length > 0)) return undefined;
  // 6. near-duplicate: similar wording, no value swapped, no distinct content word on both sides
  //    unless the overlap is very high (a value on each side that the other lacks: no rule below applies)
  if (va.length > 0 && vb.length > 0) return undefined;
  const bothSidesDiffer = wa.length > 0 && wb.length > 0;
  // (each measure only where it can decide: two sides with their own words need word Jaccard >= 0.75)
  const wj = bothSidesDiffer ? jaccard(a.content, b.content) : 1;
  const sj = !bothSidesDiffer || wj >= 0.75 ? jaccard(shinglesOf(a), shinglesOf(b)) : 0;
  if (sj >= o.nearJaccard) return { kind: 'near-duplicate', score: sj, why: `word-shingle Jaccard ${sj.toFixed(2)}` };
  const cont =
    !bothSidesDiffer && Math.min(a.content.size, b.content.size) >= 3 ? containment(a.content, b.content) : 0;
  if (cont >= o.nearContainment)
    return {
      kind: 'near-duplicate',
      score: cont,
      why: `${Math.round(cont * 100)}% of the shorter entry's significant words (stemmed, common words ignored) are in the longer one`,
    };
  if (!bothSidesDiffer && a.text.length <= o.shortChars && b.text.length <= o.shortChars) {
    a.tri ??= trigrams(a.text);
    b.tri ??= trigrams(b.text);
    const tri = jaccard(a.tri, b.tri);
    if (tri >= o.nearTrigram)
      return { kind: 'near-duplicate', score: tri, why: `character-trigram Jaccard ${tri.toFixed(2)}` };
  }
  // Scripts without spaces (Chinese ...): restated entries share most character bigrams of the shorter one.
  const cjkShare = (p: Prepared): number => p.toks.filter((t) => t.cjk).length / Math.max(1, p.toks.length);
  if (cjkShare(a) >= 0.4 && cjkShare(b) >= 0.4 && Math.min(a.content.size, b.content.size) >= 6) {
    const c2 = containment(a.content, b.content);
    if (c2 >= o.nearContainment - 0.35 && !(va.length > 0 && vb.length > 0)) {
      return {
        kind: 'near-duplicate',
        score: c2,
        why: `${Math.round(c2 * 100)}% of the shorter entry's character pairs are in the other one`,
      };
    }
  }
  // The same statement with a different addition on each side ("Prefers concise answers with code
  // first" / "User prefers concise answers and TypeScript examples"): the same opening words, which
  // are at least half of each side's words, and at least three words differ in all (one word swapped
  // for another, "Weekly sync with Ana about billing" / "... about search", is another fact).
  const opening =
    sharedN >= 3 && wa.length + wb.length >= 3 && sharedN * 2 >= a.content.size && sharedN * 2 >= b.content.size
      ? sameOpening(a, b)
      : [];
  if (opening.length >= 3 && opening.length * 2 >= a.content.size && opening.length * 2 >= b.content.size) {
    return {
      kind: 'near-duplicate',
      score: opening.length / Math.max(a.content.size, b.content.size),
      why: `both open with the same significant words (stemmed: "${opening.join(' ')}"), and each adds a detail`,
    };
  }
  if (pd.conflict.length > 0) return undefined;
  return softDuplicate(a, b, al());
}

/** Two entries choosing different members of one family (choices.ts choiceConflict). */
function choiceVerdict(a: Prepared, b: Prepared, wa: string[], wb: string[]): PairVerdict {
  const c = choiceConflict(a, b, wa, wb);
  if (!c) return undefined;
  return {
    kind: 'contradiction',
    why: `different choices of one ${c.family}`,
    detail: `"${c.a}" (${c.cueA}) vs "${c.b}" (${c.cueB}), with no scope or subject that tells the two apart`,
  };
}

/** Summed specificity (lexicon.ts) of words shown as "a" or "a~b". */
function weight(ws: string[]): number {
  let s = 0;
  for (const w of ws) s += specificity(w.split('~')[0]);
  return s;
}

/** Soft near-duplicate: weighted word alignment with the lexicon (soft.ts align). */
export const SOFT_SCORE = 0.5;

/**
 * The soft near-duplicate rules (issue 12), after every other rule said nothing:
 * 1. across two languages (one entry mostly in another script): the names, terms and values a
 *    translation keeps as written ("RunPod", "PUBLIC_KEY", "#ef4444") — at least three shared, and at
 *    least 60% of the smaller side's;
 * 2. the words aligned through lemmas, typos, derivations and WordNet synonyms ("replies" ~ "answer"),
 *    each weighted by how specific it is: weighted Dice >= SOFT_SCORE, and at least four words matched
 *    on each side, or 90% of the lighter side's weight matched.
 */
function softDuplicate(a: Prepared, b: Prepared, al: Alignment): PairVerdict {
  const lv = sameLabelValue(a, b);
  if (lv)
    return {
      kind: 'near-duplicate',
      score: 1,
      why: lv.named
        ? `the same label "${lv.label}" naming the same language (${lv.value}) in two languages: "${lv.named[0]}" / "${lv.named[1]}"`
        : `the same label "${lv.label}" with the same value "${lv.value}"`,
    };
  const mix = scriptMix(a, b);
  if (mix) {
    const x = anchors(a);
    const y = anchors(b);
    // the languages each names count as kept words too ("replies in Chinese" / "用中文回复": languages.ts)
    for (const [p, set] of [
      [a, x],
      [b, y],
    ] as const)
      for (const code of languagesNamed(p.text)) set.add(`language:${code}`);
    const both = [...x].filter((t) => y.has(t));
    // (two are enough when they are all the smaller side has and both hold digits: "#ef4444", "#22c55e")
    const specific = both.filter((t) => /\d/.test(t)).length;
    const small = Math.min(x.size, y.size);
    if (
      (both.length >= 3 && both.length >= 0.6 * small) ||
      (both.length >= 2 && both.length === small && specific >= 2)
    ) {
      return {
        kind: 'near-duplicate',
        score: both.length / Math.min(x.size, y.size),
        why: `the same names, terms and values in two languages (${mix}): ${both
          .slice(0, 6)
          .map((w) => `"${w}"`)
          .join(', ')}`,
      };
    }
    return undefined;
  }
  const matched = Math.min(al.matchedA, al.matchedB);
  if (
    (al.links.length > 0 || !al.restA.length || !al.restB.length) &&
    al.score >= SOFT_SCORE &&
    (matched >= 4 || (al.contain >= 0.9 && matched >= 2))
  ) {
    // The same frame with words swapped one for one (none a synonym of the other) is another subject, not
    // a rewording: "Ines owns the reports service" / "Ines owns the Lena service", "X owns the Y service" /
    // "Z owns the W service" (as for the rules above).
    const h = al.restA.length && al.restB.length ? frameHunks(frameOf(a), frameOf(b)) : undefined;
    if (h && h.hunks.every((x) => x.a.length === 1 && x.b.length === 1 && !relation(x.a[0].t, x.b[0].t)))
      return undefined;
    const lex = al.links.length ? `; ${al.links.slice(0, 4).join(', ')}` : '';
    return {
      kind: 'near-duplicate',
      score: al.score,
      why: `the words align (lemmas, typos, derivations and WordNet synonyms): weighted overlap ${al.score.toFixed(2)}, ${al.matchedA} and ${al.matchedB} words matched${lex}`,
    };
  }
  return undefined;
}

/**
 * Tokens in more than this many entries are not indexed by the candidate join (a fixed number, so
 * the work per entry is bounded and the join stays linear in the number of entries; the lint says
 * when it skipped any).
 */
export const MAX_DF = 200;

/** Above this many entries (and sentences) the join keeps its pairs within a budget (candidateJoin). */
export const JOIN_BUDGET_FROM = 20_000;
/** Candidate pairs per entry the join may make from shared words in a large store (estimated before the join). */
export const JOIN_BUDGET = 30;
/** The word cap never comes below this. */
const MIN_DF = 20;

/** What the candidate join left out to stay fast (reported as a lint note). */
export interface JoinStats {
  /** Tokens (masked keys) in more than maxDf entries: not indexed. */
  skippedTokens: number;
  /** Up to 5 of them, most frequent first. */
  examples: string[];
  maxDf: number;
  /** When the store was large enough to lower the cap: the cap it started from (MAX_DF). */
  loweredFrom?: number;
  /** Slot keys (labels, changed-from words) held by more than MAX_SLOT_GROUP entries: not used (slotCandidates). */
  skippedSlots?: number;
}

/** Labels of a person's identity, which a store holds for several people: not paired by label alone. */
const PERSON_LABEL = /^(?:name|call|called|nickname|title|role|pronoun|age|height|email|phone)$/;

/** A label or a changed-from word shared by more entries than this does not pair them (slotCandidates). */
export const MAX_SLOT_GROUP = 50;

/**
 * Candidate pairs the similarity join misses but the slot rules can decide (issue 12): entries with
 * the same single-valued "Label: value" label ("Timezone: America/New_York" / "Timezone: now
 * America/Chicago (Central) after the move"), and an entry that records a change from a value with
 * the entries that name that value ("switched from PostgreSQL to MySQL" / "FastAPI + PostgreSQL +
 * Redis"), and an entry mostly in a non-Latin script with the entries that share two or more of its
 * names, terms and values (soft.ts anchors). Linear: one pass builds the groups; a group larger than MAX_SLOT_GROUP is skipped and
 * counted in stats.skippedSlots.
 */
export function slotCandidates(items: Prepared[], stats?: JoinStats): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let skipped = 0;
  const byLabel = new Map<string, number[]>();
  items.forEach((p, i) => {
    if (!p.text.includes(':') && !p.text.includes('：')) return;
    for (const l of labelsOf(p)) {
      // a store names several people (the owner, the agent, family): "Name: Ryan" / "Name: Hermes Prime" are two subjects
      if (!singleValuedLabel(l.label) || PERSON_LABEL.test(l.label.join(' '))) continue;
      const k = l.label.join(' ');
      (byLabel.get(k) ?? byLabel.set(k, []).get(k)!).push(i);
    }
  });
  // any label held by two entries whose values are opposites ("投资: …中长线" / "投资: …短线"; labelOpposites)
  const anyLabel = new Map<string, number[]>();
  items.forEach((p, i) => {
    if (!p.text.includes(':') && !p.text.includes('：')) return;
    for (const l of labelsOf(p)) {
      if (singleValuedLabel(l.label)) continue;
      const k = l.label.join(' ');
      (anyLabel.get(k) ?? anyLabel.set(k, []).get(k)!).push(i);
    }
  });
  for (const g of anyLabel.values()) {
    const u = [...new Set(g)];
    if (u.length > MAX_SLOT_GROUP) {
      skipped++;
      continue;
    }
    for (let x = 0; x < u.length; x++)
      for (let y = x + 1; y < u.length; y++) if (labelOpposites(items[u[x]], items[u[y]])) out.push([u[x], u[y]]);
  }
  for (const g of byLabel.values()) {
    const u = [...new Set(g)];
    if (u.length > MAX_SLOT_GROUP) {
      skipped++;
      continue;
    }
    for (let x = 0; x < u.length; x++) for (let y = x + 1; y < u.length; y++) out.push([u[x], u[y]]);
  }
  // choices in one family (choices.ts): "Prefers pnpm over npm" / "Uses npm for everything" share no word
  const byFamily = new Map<number, number[]>();
  items.forEach((p, i) => {
    const fams = new Set<number>();
    for (const m of mentions(p)) if (m.choice && !m.against) fams.add(m.family);
    for (const f of fams) (byFamily.get(f) ?? byFamily.set(f, []).get(f)!).push(i);
  });
  for (const g of byFamily.values()) {
    if (g.length > MAX_SLOT_GROUP) {
      skipped++;
      continue;
    }
    for (let x = 0; x < g.length; x++) for (let y = x + 1; y < g.length; y++) out.push([g[x], g[y]]);
  }
  // a move ("User moved to Lisbon") and the short entries saying where one lives ("User lives in Berlin")
  const moved: number[] = [];
  const lives: number[] = [];
  items.forEach((p, i) => {
    if (/\b(?:moved|relocated) to\b/i.test(p.text) && /^(?:moved|relocated) to$/.test(markerOf(p)?.phrase ?? ''))
      moved.push(i);
    else if (p.content.size <= 4 && p.toks.some((t) => t.type === 'word' && RESIDENCE.has(t.t))) lives.push(i);
  });
  if (moved.length && lives.length) {
    if (moved.length > MAX_SLOT_GROUP || lives.length > MAX_SLOT_GROUP) skipped++;
    else for (const x of moved) for (const y of lives) out.push(x < y ? [x, y] : [y, x]);
  }
  // changed-from words: the rarest content word of the "from" value, looked up in every entry's words
  const wanted = new Map<string, number[]>();
  items.forEach((p, i) => {
    if (!/from|从|was|formerly|previously|instead/i.test(p.text)) return;
    const from = markerOf(p)?.from;
    if (!from) return;
    const w =
      tokens(from).find((t) => t.type === 'word' && !t.cjk && specificity(t.t) === 1) ??
      tokens(from).find((t) => t.type === 'word' && !t.cjk);
    if (w) (wanted.get(w.t) ?? wanted.set(w.t, []).get(w.t)!).push(i);
  });
  if (wanted.size) {
    const holders = new Map<string, number[]>();
    items.forEach((p, i) => {
      for (const w of p.words) if (wanted.has(w)) (holders.get(w) ?? holders.set(w, []).get(w)!).push(i);
    });
    for (const [w, marked] of wanted) {
      const hs = holders.get(w) ?? [];
      if (hs.length > MAX_SLOT_GROUP) {
        skipped++;
        continue;
      }
      for (const x of marked) for (const y of hs) if (x !== y) out.push(x < y ? [x, y] : [y, x]);
    }
  }
  // an entry mostly in a non-Latin script and the entries that share two or more of the names, terms and
  // values it keeps as written ("RunPod", "PUBLIC_KEY", "taskkill", "#ef4444"): its CJK character pairs
  // outweigh them in the similarity join
  const mixed = new Map<number, Set<string>>();
  items.forEach((p, i) => {
    if (otherScript(p) < 0.25) return;
    const an = anchors(p);
    if (an.size >= 2) mixed.set(i, an);
  });
  if (mixed.size) {
    const need = new Set<string>();
    for (const an of mixed.values()) for (const t of an) need.add(t);
    const post = new Map<string, number[]>();
    items.forEach((p, i) => {
      for (const t of anchors(p)) if (need.has(t)) (post.get(t) ?? post.set(t, []).get(t)!).push(i);
    });
    const tooCommon = new Set<string>();
    for (const [t, list] of post) if (list.length > MAX_SLOT_GROUP) tooCommon.add(t);
    skipped += tooCommon.size;
    for (const [x, an] of mixed) {
      const count = new Map<number, number>();
      for (const t of an) {
        if (tooCommon.has(t)) continue;
        for (const y of post.get(t) ?? []) if (y !== x) count.set(y, (count.get(y) ?? 0) + 1);
      }
      for (const [y, c] of count) if (c >= 2 && !(mixed.has(y) && y < x)) out.push(x < y ? [x, y] : [y, x]);
    }
  }
  if (stats) stats.skippedSlots = skipped;
  return out;
}

/**
 * Pairs of indices [i, j] (i < j into `items`) whose masked token sets have IDF-weighted Jaccard >= t
 * (a token's weight is ln(1 + n/df), so words every entry shares, such as a template's "user prefers",
 * weigh little and the rare words that name a subject weigh a lot). Weighted prefix filtering: tokens
 * ordered rarest first; a set indexes its tokens until the weight left after them is below t·W (W its
 * total weight), because a pair with weighted Jaccard >= t shares more than t·W of weight and so
 * shares a token in that prefix; partners lighter than t·W are skipped (length filter).
 * Tokens in more than `maxDf` entries (default max(100, 2% of n)) are not indexed, like a search
 * engine's stop words: a pair that shares only such tokens is not a candidate. This bounds the work
 * on template-like stores (10,000 "Staging host for X is IP" lines), at the cost of that guarantee.
 */
export function candidatePairs(
  items: Prepared[],
  t: number,
  maxDf = MAX_DF,
  containment = 0,
  stats?: JoinStats,
): Array<[number, number]> {
  const flat = candidateJoin(items, t, maxDf, containment, stats);
  const out: Array<[number, number]> = [];
  for (let k = 0; k < flat.length; k += 2) out.push([flat[k], flat[k + 1]]);
  return out;
}

/**
 * candidatePairs as a flat list [x0, y0, x1, y1, ...] (x < y, each pair once): no array per pair, for
 * stores of 100,000+ entries.
 */
export function candidateJoin(
  items: Prepared[],
  t: number,
  maxDf = MAX_DF,
  containment = 0,
  stats?: JoinStats,
): number[] {
  const n = items.length;
  // Token ids, document frequencies and weights in flat arrays (this runs on 10,000+ entries).
  const ids = new Map<string, number>();
  const dfl: number[] = [];
  const sets: Int32Array[] = items.map((it) => {
    const a = new Int32Array(it.masked.length);
    it.masked.forEach((k, j) => {
      let id = ids.get(k);
      if (id === undefined) {
        id = dfl.length;
        ids.set(k, id);
        dfl.push(0);
      }
      dfl[id]++;
      a[j] = id;
    });
    return a;
  });
  const df = Int32Array.from(dfl);
  // In a large store, the words shared by many entries would pair each entry with hundreds of others
  // (a word in d entries makes up to d·(d−1)/2 pairs): the cap comes down until those pairs are at most
  // JOIN_BUDGET per entry, so the work stays linear (the lint note says which words were skipped).
  if (n > JOIN_BUDGET_FROM && Number.isFinite(maxDf)) {
    const sorted = Int32Array.from(dfl).sort();
    let pairs = 0;
    let cap = 0;
    for (let k = 0; k < sorted.length && sorted[k] <= maxDf;) {
      const d = sorted[k];
      let same = 0;
      while (k < sorted.length && sorted[k] === d) {
        same++;
        k++;
      }
      pairs += (same * d * (d - 1)) / 2;
      if (pairs > JOIN_BUDGET * n) break;
      cap = d;
    }
    const lowered = Math.max(MIN_DF, cap);
    if (lowered < maxDf) {
      if (stats) stats.loweredFrom = maxDf;
      maxDf = lowered;
    }
  }
  if (stats) {
    stats.maxDf = maxDf;
    const skipped = [...ids.entries()].filter(([, id]) => dfl[id] > maxDf).sort((x, y) => dfl[y[1]] - dfl[x[1]]);
    stats.skippedTokens = skipped.length;
    stats.examples = skipped.slice(0, 5).map(([k]) => k);
  }
  // IDF with a floor on the corpus size: in a store of a few entries every shared word would otherwise
  // weigh half of an unshared one, and restatements of one fact would never meet.
  const N0 = Math.max(n, 1000);
  const w = Float64Array.from(dfl, (d) => Math.log(1 + N0 / d));
  // Rank: rarest first (ties by id), so prefixes hold the rare tokens. Sets sorted by rank for merges.
  const byRarity = Array.from(dfl.keys()).sort((x, y) => df[x] - df[y] || x - y);
  const rank = new Int32Array(dfl.length);
  byRarity.forEach((id, r) => (rank[id] = r));
  const total = new Float64Array(n);
  const prefixLen = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const a = sets[i].sort((x, y) => rank[x] - rank[y]);
    let tw = 0;
    for (const id of a) tw += w[id];
    total[i] = tw;
    let rest = tw;
    let p = 0;
    while (p < a.length && rest >= t * tw - 1e-12) rest -= w[a[p++]];
    prefixLen[i] = p;
  }
  const inter = (x: Int32Array, y: Int32Array): number => {
    let i = 0;
    let j = 0;
    let s = 0;
    while (i < x.length && j < y.length) {
      const rx = rank[x[i]];
      const ry = rank[y[j]];
      if (rx === ry) {
        s += w[x[i]];
        i++;
        j++;
      } else if (rx < ry) i++;
      else j++;
    }
    return s;
  };
  // Containment candidates (issue 12: a condensed restatement shares most of its weight with a longer
  // entry, but little of the longer one's): the smaller set's prefix (rarest tokens until the weight
  // left is below c·W) must meet the other set anywhere, so every token with df <= maxDf is indexed.
  const c = containment;
  const containPrefix = new Int32Array(n);
  if (c > 0) {
    for (let i = 0; i < n; i++) {
      const a = sets[i];
      let rest = total[i];
      let p = 0;
      while (p < a.length && rest >= c * total[i] - 1e-12) rest -= w[a[p++]];
      containPrefix[i] = p;
    }
  }
  const order = Array.from(total.keys()).sort((x, y) => total[x] - total[y]);
  const index: number[][] = Array.from({ length: dfl.length }, () => []);
  const out: number[] = [];
  const seenAt = new Int32Array(n).fill(-1);
  for (const x of order) {
    const sx = sets[x];
    if (sx.length === 0) continue;
    const minW = t * total[x] - 1e-12;
    for (let p = 0; p < prefixLen[x]; p++) {
      const tok = sx[p];
      if (df[tok] > maxDf) continue;
      const list = index[tok];
      for (let q = 0; q < list.length; q++) {
        const y = list[q];
        if (seenAt[y] === x || total[y] < minW) continue;
        seenAt[y] = x;
        const o = inter(sx, sets[y]);
        if (o / (total[x] + total[y] - o) >= t - 1e-12) {
          if (x < y) out.push(x, y);
          else out.push(y, x);
        }
      }
    }
    for (let p = 0; p < prefixLen[x]; p++) if (df[sx[p]] <= maxDf) index[sx[p]].push(x);
  }
  if (c > 0) {
    // Full postings (token → entries), then each entry probes with its containment prefix the entries
    // at least as heavy as itself.
    const post: number[][] = Array.from({ length: dfl.length }, () => []);
    for (let i = 0; i < n; i++) for (const tok of sets[i]) if (df[tok] <= maxDf) post[tok].push(i);
    const seen2 = new Int32Array(n).fill(-1);
    // The pairs the join found, as adjacency lists (CSR), so that a pair is not found twice: each x marks
    // its join partners as seen before it probes.
    const deg = new Int32Array(n + 1);
    for (let k = 0; k < out.length; k++) deg[out[k] + 1]++;
    for (let i = 0; i < n; i++) deg[i + 1] += deg[i];
    const adj = new Int32Array(out.length);
    const fill = deg.slice(0, n);
    for (let k = 0; k < out.length; k += 2) {
      adj[fill[out[k]]++] = out[k + 1];
      adj[fill[out[k + 1]]++] = out[k];
    }
    for (let x = 0; x < n; x++) {
      const sx = sets[x];
      for (let k = deg[x]; k < deg[x + 1]; k++) seen2[adj[k]] = x;
      for (let p = 0; p < containPrefix[x]; p++) {
        const tok = sx[p];
        if (df[tok] > maxDf) continue;
        for (const y of post[tok]) {
          if (y === x || seen2[y] === x || total[y] < total[x] || (total[y] === total[x] && y < x)) continue;
          seen2[y] = x;
          const o = inter(sx, sets[y]);
          // (seen2 also keeps y's own probe from finding this pair again: y probes only heavier entries)
          if (o / total[x] >= c - 1e-12) {
            if (x < y) out.push(x, y);
            else out.push(y, x);
          }
        }
      }
    }
  }
  return out;
}

/** Words that name a single-valued attribute in "X: value" labels too (besides FUNCTIONAL). */
const LABEL_SINGLE =
  /^(?:name|call|called|timezone|tz|time zone|language|lang|preferred language|pronoun|role|title|company|employer|location|city|country|home|model|provider|editor|shell|os|default|port|version|email|phone|branch|voice|tts voice|browser|target|deploy target|height|age)$/;

function markerOf(p: Prepared): UpdateMarker | undefined {
  if (p.marker === undefined) p.marker = updateMarker(p.text) ?? null;
  return p.marker ?? undefined;
}

/** Words of where one lives (canonical): "lives in", "based in", "located in", "home", "resides". */
const RESIDENCE = new Set(['live', 'base', 'based', 'locate', 'located', 'reside', 'home', 'hometown']);

/**
 * Whether `p` is a short entry saying where its subject lives ("User lives in Berlin", "Kiran is based
 * in Pune") and `mover`'s words hold that subject (the words before the residence word; "user" is
 * everyone's implied subject).
 */
function livesSubjectIn(p: Prepared, mover: Prepared): boolean {
  if (p.content.size > 4) return false;
  const k = p.toks.findIndex((t) => t.type === 'word' && RESIDENCE.has(t.t));
  if (k < 0) return false;
  return p.toks.slice(0, k).every((t) => t.type !== 'word' || SUBJECT_WORDS.has(t.t) || mover.content.has(t.t));
}

/** The update marker when it records a change (not a weak "as of" / "these days"). */
function changeMarkerOf(p: Prepared): UpdateMarker | undefined {
  const m = markerOf(p);
  return m && !m.weak ? m : undefined;
}

/** Content tokens both entries share, and the smaller content size. */
function overlap(a: Prepared, b: Prepared): { shared: number; jac: number } {
  let shared = 0;
  for (const w of a.content) if (b.content.has(w)) shared++;
  return { shared, jac: shared / Math.max(1, a.content.size + b.content.size - shared) };
}

/**
 * The slot rules (docs/memory-lint.md "Slots and changes over time"):
 * 1. one side records a change ("moved from A to B", "switched to", "no longer", "已迁移") about the
 *    same subject as the other (its "from" value is in the other entry, or they share enough words),
 *    and the other is not itself about the past ("lived in"): superseded, the marked side is newer;
 * 2. the same "Label: value" label with a different short value: contradiction;
 * 3. the same wording except one short span on each side (≤ 3 tokens), where the spans are values
 *    of one type, exclusive alternatives, antonyms, or follow a single-valued attribute word
 *    ("lives in", "timezone", "port", "replies in", "deploy target is"): contradiction.
 */
function slotVerdict(a: Prepared, b: Prepared, wa: string[], wb: string[]): PairVerdict {
  const { shared } = overlap(a, b);
  // 1. a change over time
  const change = changeOverTime(a, b);
  if (change) return change;
  // 2. "Label: value"
  return labelVerdict(a, b) ?? spanVerdict(a, b, wa, wb, shared);
}

/**
 * A change over time: one side records a change ("moved from A to B", "switched to", "no longer",
 * "已迁移") about the same subject as the other (its "from" value is in the other entry, or they
 * share enough words), and the other is not itself about the past ("lived in"): the marked side is newer.
 */
function changeOverTime(a: Prepared, b: Prepared): PairVerdict {
  const ma = markerOf(a);
  const mb = markerOf(b);
  const { shared, jac } = overlap(a, b);
  if (!!ma !== !!mb && !(ma ?? mb)!.weak) {
    const [other, side] = ma ? [b, 'a' as const] : [a, 'b' as const];
    const m = (ma ?? mb)!;
    const fromHit =
      m.from !== undefined &&
      tokens(m.from).some((t) => t.type !== 'word' || (!t.cjk && other.content.has(t.t))) &&
      tokens(m.from)
        .filter((t) => t.type === 'word')
        .every((t) => t.cjk || other.words.has(t.t) || other.content.size === 0);
    const small = Math.min(a.content.size, b.content.size);
    // "moved to Lisbon" changes where one lives: a short entry saying where the subject lives, is based
    // or located ("User lives in Berlin") is about the same thing, though the two share no word
    // (the words before "lives" are the subject, which the move must name too: "Kiran lives in …" /
    // "Priya moved to …" are two people)
    const residence =
      /^(?:moved|relocated) to$/.test(m.phrase) &&
      /\b(?:moved|relocated) to\b/i.test((ma ? a : b).text) &&
      livesSubjectIn(other, ma ? a : b);
    const sameSubject =
      fromHit || residence || shared >= 3 || (shared >= 2 && jac >= 0.3) || (small <= 3 && shared >= 1 && jac >= 0.25);
    // "不再用 X" (no longer uses X) and "不用 X" (does not use X) say the same: a retiring marker needs a
    // positive statement on the other side.
    const otherNegated = m.retires && negatesMarked(other, ma ? a : b, m.phrase);
    if (sameSubject && !aboutThePast(other.text) && !(m.retires && otherNegated)) {
      return {
        kind: 'contradiction',
        why: 'change over time',
        detail: `the newer entry says "${m.phrase}"${m.from ? ` (from ${m.from})` : ''}`,
        update: { newer: side, marker: m.phrase },
      };
    }
  }
  return undefined;
}

/**
 * Whether `other` negates what the retiring marker of `marked` retires: a word of the marked sentence
 * (the one holding the marker) is negated in `other` ("不再用 X" / "不用 X", "no longer vegetarian" /
 * "not vegetarian": the same statement). A negation elsewhere in `other` ("不在 PATH" beside the old
 * build that the other entry retires) is another clause.
 */
function negatesMarked(other: Prepared, marked: Prepared, phrase: string): boolean {
  const s = normOf(marked);
  const at = s.indexOf(phrase);
  const from = at < 0 ? 0 : Math.max(...[...s.slice(0, at).matchAll(/[.;!?。；\n]/gu)].map((x) => x.index + 1), 0);
  const endRel = at < 0 ? -1 : s.slice(at).search(/[.;!?。；\n]/u);
  const to = at < 0 || endRel < 0 ? s.length : at + endRel;
  const words = new Set(
    marked.toks.filter((t) => t.type === 'word' && t.at !== undefined && t.at >= from && t.at < to).map((t) => t.t),
  );
  const pol = polarity(other);
  for (const [w, x] of pol) if (x < 0 && words.has(w)) return true;
  return false;
}

/** The "Label: value" statements of an entry, computed once. */
export function labelsOf(p: Prepared): LabelValue[] {
  p.labels ??= p.text.includes(':') || p.text.includes('：') ? labelValues(p.text) : [];
  return p.labels;
}

/** Whether a label names a single-valued attribute ("Timezone", "Preferred language", "Name"). */
export function singleValuedLabel(label: string[]): boolean {
  return LABEL_SINGLE.test(label.join(' ')) || (label.length === 1 && FUNCTIONAL.has(label[0]));
}

/** The value tokens of a label, with the last segment of a slashed name ("asia/shanghai" → also "shanghai"). */
function valueSet(l: LabelValue): Set<string> {
  const out = new Set(l.valueTokens);
  for (const t of l.valueTokens) if (t.includes('/') && !t.endsWith('/')) out.add(t.slice(t.lastIndexOf('/') + 1));
  return out;
}

/**
 * The same single-valued label with a value that names the same thing ("TZ: Asia/Shanghai" /
 * "Timezone: UTC+8, Shanghai"): a shared value word that is a name or term, not a common word.
 */
function sameLabelValue(
  a: Prepared,
  b: Prepared,
): { label: string; value: string; named?: [string, string] } | undefined {
  for (const x of labelsOf(a)) {
    for (const y of labelsOf(b)) {
      if (x.label.join(' ') !== y.label.join(' ') || !singleValuedLabel(x.label)) continue;
      const Y = valueSet(y);
      const hit = [...valueSet(x)].find((t) => Y.has(t) && specificity(t) === 1);
      if (hit) return { label: x.label.join(' '), value: hit };
      // the same language named in two languages ("Language: Thai only" / "Language: ไทยเท่านั้น")
      const langs = sameLanguagesNamed(x.value, y.value);
      if (langs) return { label: x.label.join(' '), value: langs.join(', '), named: [x.value, y.value] };
    }
  }
  return undefined;
}

/** The same single-valued "Label: value" label with a short, different value. */
function labelVerdict(a: Prepared, b: Prepared): PairVerdict {
  const la = labelsOf(a);
  const lb = labelsOf(b);
  for (const x of la) {
    for (const y of lb) {
      if (x.label.join(' ') !== y.label.join(' ') || !singleValuedLabel(x.label)) continue;
      const X = valueSet(x);
      const Y = valueSet(y);
      if (!X.size || !Y.size || X.size > 8 || Y.size > 8) continue;
      // one language named in two languages ("Language: Chinese" / "Language: 中文") is one value
      if (sameLanguagesNamed(x.value, y.value)) continue;
      let inter = 0;
      for (const t of X) if (Y.has(t)) inter++;
      // two spellings of one time zone ("Asia/Shanghai" / "UTC+8": their UTC offsets meet) are one value
      if (anyPair(X, Y, sameZone)) continue;
      if (inter === 0)
        return {
          kind: 'contradiction',
          why: 'single-valued attribute',
          detail: `${x.label.join(' ')}: "${x.value}" vs "${y.value}"`,
        };
    }
  }
  return undefined;
}

/**
 * One entry edited in one place, where several values changed ("cron 17:00/17:10" → "cron
 * 20:30/20:40"): a single differing hunk of 1-8 values of the same types on each side (no dates: two
 * dates are two events), in a frame of six or more shared tokens.
 */
function valuesHunk(a: Prepared, b: Prepared): PairVerdict {
  if (Math.abs(a.toks.length - b.toks.length) > 8 || !oneHunkPossible(a, b, 8, 6)) return undefined;
  const d = frameDiff(frameOf(a), frameOf(b));
  if (!d || !d.a.length || d.a.length !== d.b.length || d.a.length > 8 || d.frame.length < 6) return undefined;
  const types = (ts: Token[]): string => ts.map((t) => (t.type === 'ver' ? 'num' : t.type)).join(',');
  if (d.a.some((t) => t.type === 'word' || t.type === 'date') || types(d.a) !== types(d.b)) return undefined;
  return {
    kind: 'contradiction',
    why: 'same subject, different values',
    detail: `"${d.a.map((t) => t.t).join(' ')}" vs "${d.b.map((t) => t.t).join(' ')}" after "${d.before.join(' ')}"`,
  };
}

/**
 * One entry restating the other except for one short span, a name (CJK, digits, `@`, `_`, a dotted or
 * dashed identifier) or an exclusive alternative swapped for another, while the longer one adds details
 * elsewhere: the aligned wordings differ in one place on both sides (1-3 tokens each) and otherwise
 * only by tokens of the longer entry, in a frame of six or more shared tokens. A span right after a
 * scope ("for repo-a" / "for repo-b") names two things, not one value.
 */
function nameSwappedWithAdditions(a: Prepared, b: Prepared): PairVerdict {
  const fa = frameOf(a);
  const fb = frameOf(b);
  const [short, long] = fa.length <= fb.length ? [a, b] : [b, a];
  const fs = frameOf(short);
  // (a cheap bound first: the shorter side has one to three tokens the longer lacks, and six it has)
  if (fs.length < 7) return undefined;
  const sl = frameSetOf(long);
  let miss = 0;
  for (const t of fs) if (!sl.has(t.t)) miss++;
  if (miss === 0 || miss > 3 || fs.length - miss < 6) return undefined;
  const h = frameHunks(frameOf(short), frameOf(long));
  if (!h || h.frame.length < 6) return undefined;
  const both = h.hunks.filter((x) => x.a.length && x.b.length);
  if (both.length !== 1 || h.hunks.some((x) => x.a.length && !x.b.length)) return undefined;
  const [x] = both;
  if (x.a.length > 3 || x.b.length > 3) return undefined;
  const nameLike = (ts: Token[]): boolean => ts.some((t) => t.type !== 'word' || /[0-9@/_.-]/.test(t.t) || t.cjk);
  const alt = x.a.some((s) => x.b.some((t) => areAlternatives(s.t, t.t)));
  if (!(alt || (nameLike(x.a) && nameLike(x.b)))) return undefined;
  // a token of one span elsewhere in the other entry: moved, not swapped; a date: an event
  const ss = frameSetOf(short);
  if (x.a.some((t) => sl.has(t.t) || t.type === 'date') || x.b.some((t) => ss.has(t.t) || t.type === 'date'))
    return undefined;
  const afterScope = (p: Prepared, ts: Token[]): boolean =>
    ts[0].at !== undefined &&
    /\b(?:for|in|on|at|of|during|when|inside|under)\s+(?:the\s+)?$/.test(
      normOf(p).slice(Math.max(0, ts[0].at - 16), ts[0].at),
    );
  if (afterScope(short, x.a) || afterScope(long, x.b)) return undefined;
  // (CJK spans are shown as written: the bigrams of "联通" are "联通" and "通宽")
  const shown = (p: Prepared, ts: Token[]): string => {
    const text = normOf(p);
    const first = ts[0].at;
    const last = ts[ts.length - 1];
    if (first === undefined || last.at === undefined) return ts.map((t) => t.t).join(' ');
    return text.slice(first, last.at + (last.cjk ? 1 : last.t.length));
  };
  const [sa, sb] = short === a ? [shown(a, x.a), shown(b, x.b)] : [shown(a, x.b), shown(b, x.a)];
  // the two spans share a character of a CJK word or a part of a name: a rewording of one name
  // ("杀死Agent" / "杀Agent", "Kepler.gl/L7" / "Kepler.gl and L7"), not two names
  const bits = (v: string): Set<string> =>
    new Set(v.split(/[^\p{L}\p{N}]+|(?=\p{Script=Han})|(?<=\p{Script=Han})/u).filter(Boolean));
  const bb = bits(sb);
  if ([...bits(sa)].some((c) => bb.has(c))) return undefined;
  return {
    kind: 'contradiction',
    why: alt ? 'exclusive alternatives' : 'one name swapped for another',
    detail: `"${sa}" vs "${sb}" after "${h.frame.slice(Math.max(0, x.at - 2), x.at).join(' ') || '(the start)'}", and the longer entry only adds details`,
  };
}

/**
 * Antonyms that turn a clause around rather than name a value ("Always wait for the user before a
 * commit" / "Never commit without the user" agree; allow/forbid, add/remove, enable/disable): the
 * clause rules judge them, not labelOpposites.
 */
const POLARITY_ANTONYMS = new Set([
  'always',
  'never',
  'yes',
  'no',
  'on',
  'off',
  'before',
  'after',
  'up',
  'down',
  'allow',
  'deny',
  'forbid',
  'allowed',
  'forbidden',
  'accept',
  'reject',
  'include',
  'exclude',
  'add',
  'remove',
  'start',
  'stop',
  'install',
  'uninstall',
  'enable',
  'disable',
  'like',
  'dislike',
]);

/**
 * The same "Label: value" label on both sides with values that hold antonyms (WordNet's main senses,
 * the antonym list, or Chinese words with one opposite character: "长线" / "短线"), the one value
 * without the other's word: contradiction. A label of many facts ("Schedule: early standup" /
 * "Schedule: late dinner") needs the two values to share a word besides the antonyms; a label of a
 * single-valued attribute does not.
 */
function labelOpposites(a: Prepared, b: Prepared): PairVerdict {
  const la = labelsOf(a);
  const lb = labelsOf(b);
  if (!la.length || !lb.length) return undefined;
  const opposite = (x: string, y: string): boolean =>
    (areAntonyms(x, y) && !POLARITY_ANTONYMS.has(x) && !POLARITY_ANTONYMS.has(y)) || cjkAntonyms(x, y);
  for (const x of la) {
    for (const y of lb) {
      if (x.label.join(' ') !== y.label.join(' ')) continue;
      const X = new Set(x.valueTokens);
      const Y = new Set(y.valueTokens);
      let pair: [string, string] | undefined;
      for (const s of X) {
        if (Y.has(s)) continue;
        for (const t of Y) if (!X.has(t) && opposite(s, t) && ![...X].some((u) => u === t)) pair ??= [s, t];
      }
      if (!pair) continue;
      const shared = [...X].filter((t) => Y.has(t) && !/^\d/.test(t));
      if (!shared.length && !singleValuedLabel(x.label)) continue;
      return {
        kind: 'contradiction',
        why: 'the same label with opposite values',
        detail: `${x.label.join(' ')}: "${pair[0]}" vs "${pair[1]}"${
          shared.length
            ? ` (both about ${shared
                .slice(0, 3)
                .map((w) => `"${w}"`)
                .join(', ')})`
            : ''
        }`,
      };
    }
  }
  return undefined;
}

/** Two versions of one entry: the share of each side's tokens in the shared frame (editedEntry). */
export const EDITED_COVERAGE = 0.5;

/**
 * Two versions of one long entry (a store that appended an edit instead of replacing the entry): the
 * two wordings aligned share at least 12 tokens in order and half of the shorter side's, and in one of the places where
 * they differ a value was swapped for another of its type (not a date, not a prefix: "v0.9" / "v0.9.1"
 * agree) or a word for an exclusive alternative ("Ubuntu" → "Arch"), while the other places add, drop
 * or reword details. Two entries that share most of their wording and disagree in a value are one
 * fact stated twice with two values.
 */
function editedEntry(a: Prepared, b: Prepared): PairVerdict {
  const fa = frameOf(a);
  const fb = frameOf(b);
  if (fa.length < 10 || fb.length < 10 || !oneHunkPossibleShare(a, b)) return undefined;
  const h = frameHunks(fa, fb);
  if (!h || h.frame.length < 12 || h.frame.length < EDITED_COVERAGE * Math.min(fa.length, fb.length)) return undefined;
  const prefix = (x: string, y: string): boolean => x.startsWith(y) || y.startsWith(x);
  // records of a list ("Runbook step 1: on host web-01 …" / "step 2: on host web-02 …"): every place
  // that differs is values only, in two places or more, or the first is an index at the start
  const valuesOnly = (ts: Token[]): boolean => ts.length > 0 && ts.every((t) => t.type !== 'word' || /\d/.test(t.t));
  if (h.hunks.length >= 2 && h.hunks.every((x) => valuesOnly(x.a) && valuesOnly(x.b))) return undefined;
  if (h.hunks[0] && h.hunks[0].at <= 2 && valuesOnly(h.hunks[0].a) && valuesOnly(h.hunks[0].b)) return undefined;
  for (const x of h.hunks) {
    if (!x.a.length || !x.b.length) continue;
    for (const s of x.a) {
      for (const t of x.b) {
        const typeS = s.type === 'ver' ? 'num' : s.type;
        const typeT = t.type === 'ver' ? 'num' : t.type;
        const valueSwap = s.type !== 'word' && s.type !== 'date' && typeS === typeT && !prefix(s.t, t.t);
        const altSwap = s.type === 'word' && t.type === 'word' && areAlternatives(s.t, t.t);
        if (!valueSwap && !altSwap) continue;
        // the same value (or member) elsewhere on the other side: moved, not swapped
        if (b.values.has(s.t) || a.values.has(t.t) || b.words.has(s.t) || a.words.has(t.t)) continue;
        const share = Math.round((h.frame.length / Math.min(fa.length, fb.length)) * 100);
        return {
          kind: 'contradiction',
          why: altSwap
            ? 'one entry in two versions, an alternative swapped'
            : 'one entry in two versions, a value swapped',
          detail: `"${s.t}" vs "${t.t}" after "${h.frame.slice(Math.max(0, x.at - 2), x.at).join(' ')}" (${h.frame.length} tokens in the same order, ${share}% of the shorter entry)`,
        };
      }
    }
  }
  return undefined;
}

/** Whether the tokens the two share could make EDITED_COVERAGE of the shorter side (a cheap bound before the alignment). */
function oneHunkPossibleShare(a: Prepared, b: Prepared): boolean {
  const fa = frameOf(a);
  const fb = frameOf(b);
  const sa = frameSetOf(a);
  const sb = frameSetOf(b);
  let inB = 0;
  for (const t of fa) if (sb.has(t.t)) inB++;
  let inA = 0;
  for (const t of fb) if (sa.has(t.t)) inA++;
  return Math.min(inB, inA) >= EDITED_COVERAGE * Math.min(fa.length, fb.length);
}

/** Whether some x of `xs` and y of `ys` satisfy `f(x, y)` (no arrays built: this runs per pair). */
function anyPair(xs: Iterable<string>, ys: Iterable<string>, f: (x: string, y: string) => boolean): boolean {
  for (const x of xs) for (const y of ys) if (f(x, y)) return true;
  return false;
}

/** One short span swapped in the same frame. */
function spanVerdict(a: Prepared, b: Prepared, wa: string[], wb: string[], shared: number): PairVerdict {
  // 3. one span swapped in the same frame (only worth aligning when few words differ)
  const d =
    wa.length <= 6 && wb.length <= 6 && shared >= 1 && oneHunkPossible(a, b, 3, 2)
      ? frameDiff(frameOf(a), frameOf(b))
      : undefined;
  if (d && d.a.length && d.b.length && d.a.length <= 3 && d.b.length <= 3 && d.frame.length >= 2) {
    const sa = d.a.map((t) => t.t);
    const sb = d.b.map((t) => t.t);
    const typeOf = (ts: Token[]): string =>
      ts.every((t) => t.type !== 'word') ? ts.map((t) => (t.type === 'ver' ? 'num' : t.type)).join(',') : 'word';
    const valuesOfOneType = typeOf(d.a) !== 'word' && typeOf(d.a) === typeOf(d.b) && typeOf(d.a) !== 'date';
    // (the words of a slashed compound count one by one: "puppeteer/chromium" / "firefox")
    const split = (ws: string[]): string[] =>
      ws.flatMap((w) => (w.includes('/') && !w.startsWith('/') ? [w, ...w.split('/')] : [w]));
    // "runs [Ubuntu on the laptop]" / "runs [Fedora on the server]": each span ends in a scope of its
    // own (a word after "on", "for", "in" ...), so two things differ, not one value
    const scopedTail = (p: Prepared, ts: Token[]): boolean => {
      const text = normOf(p);
      return ts.some(
        (t, k) =>
          k > 0 &&
          t.at !== undefined &&
          ts[k - 1].at !== undefined &&
          /\b(?:for|in|on|at|of|during|when|inside|under)\b/.test(text.slice(ts[k - 1].at!, t.at)),
      );
    };
    const tails = scopedTail(a, d.a) && scopedTail(b, d.b);
    const alt = !tails && split(sa).some((x) => split(sb).some((y) => areAlternatives(x, y) || areAntonyms(x, y)));
    // "deploy target for previews is staging" / "... for releases is production": the first word of
    // each span is a scope (after "for", "in", "on" ...), so two things differ, not one value.
    const scoped = (p: Prepared, ts: Token[]): boolean =>
      ts.length >= 2 &&
      ts[0].at !== undefined &&
      /\b(?:for|in|on|at|of|during|when)\s+$/.test(normOf(p).slice(Math.max(0, ts[0].at - 12), ts[0].at));
    const attr =
      d.before.some((w) => FUNCTIONAL.has(w) || SLOT_WORDS.has(w)) && !(scoped(a, d.a) && scoped(b, d.b)) && !tails;
    const cjk = d.a.some((t) => t.cjk) || d.b.some((t) => t.cjk);
    // A name-like span (digits, @, /, _, a dotted or dashed identifier, a CJK name) swapped for another in an
    // otherwise identical entry of some length is another value, not a rewording ("repo X" → "repo Y",
    // "@小聪明蛋" → "@木马牛", "skill ai-3d-model-pipeline" → "skill ai-image-to-3d").
    const nameLike = (ts: Token[]): boolean => ts.some((t) => t.type !== 'word' || /[0-9@/_.-]/.test(t.t) || t.cjk);
    // a handle: "@木马牛" / "@Gödel"
    const handle = (p: Prepared, ts: Token[]): boolean =>
      p.text.includes('@') && ts[0].at !== undefined && normOf(p)[ts[0].at - 1] === '@';
    const named =
      ((nameLike(d.a) && nameLike(d.b)) || (handle(a, d.a) && handle(b, d.b))) &&
      d.frame.length >= 6 &&
      !sa.some((x) => sb.includes(x));
    const zone = sa.some((x) => sb.some((y) => sameZone(x, y)));
    if (!zone && (!cjk || named) && (valuesOfOneType || alt || named || (attr && wa.length <= 3 && wb.length <= 3))) {
      return {
        kind: 'contradiction',
        why: valuesOfOneType
          ? 'same subject, different value'
          : alt
            ? 'exclusive alternatives'
            : named
              ? 'one name swapped for another'
              : 'single-valued attribute',
        detail: `"${sa.join(' ')}" vs "${sb.join(' ')}" after "${d.before.join(' ')}"`,
      };
    }
  }
  return undefined;
}

/** The tokens frameDiff aligns (slots.ts frameTokens, first 80), and their set, computed once per entry. */
function frameOf(p: Prepared): Token[] {
  p.frame ??= frameTokens(p.toks).slice(0, 80);
  return p.frame;
}
function frameSetOf(p: Prepared): Set<string> {
  p.frameSet ??= new Set(frameOf(p).map((t) => t.t));
  return p.frameSet;
}

/**
 * Whether frameDiff can find one differing place of at most `maxSpan` tokens on each side in a shared
 * frame of at least `minFrame` tokens: the frame is at most the tokens of each side found in the other
 * (an upper bound of the longest common subsequence), so a side with more than `maxSpan` tokens the
 * other lacks cannot qualify. A cheap test before the alignment.
 */
function oneHunkPossible(a: Prepared, b: Prepared, maxSpan: number, minFrame: number): boolean {
  const fa = frameOf(a);
  const fb = frameOf(b);
  const sa = frameSetOf(a);
  const sb = frameSetOf(b);
  let inB = 0;
  for (const t of fa) if (sb.has(t.t)) inB++;
  if (fa.length - inB > maxSpan || inB < minFrame) return false;
  let inA = 0;
  for (const t of fb) if (sa.has(t.t)) inA++;
  return fb.length - inA <= maxSpan && inA >= minFrame;
}

/** Words after which one value stands (besides FUNCTIONAL): "lives in X", "replies in X", "target is X". */
const SLOT_WORDS = new Set([
  'in',
  'target',
  'reply',
  'answer',
  'respond',
  'response',
  'speak',
  'language',
  'lang',
  'model',
  'provider',
  'voice',
  'priority',
  'backend',
  'via',
]);
