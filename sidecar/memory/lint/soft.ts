/**
 * Soft matching for the memory lint (issue 12: paraphrases with little word overlap, negations in a
 * clause, restatements across two languages). Pure functions over prepared entries; every result
 * carries the words that matched and how, for the finding's evidence.
 *
 * - `align(a, b)`: each content word of one entry is matched with the other's — the same word
 *   (lemma), a typo, one derivational family ("configure" / "configuration") or a synonym ("reply" /
 *   "answer") from the WordNet-derived lexicon (lexicon.ts) — weighted by how specific the word is
 *   (a name or term 1, a common word less); the weighted Dice and the containment of the lighter side.
 * - `polarity(p)`: which words stand in the scope of a negation in their clause ("no iPhone", "does
 *   not want a blunt persona", "forbidden all database writes", "over local scripts", "禁止 taskkill").
 * - `anchors(p)`: the words an entry in another language would keep as written (names, terms, code,
 *   values), for restatements across two languages.
 */
import { known, relation, specificity } from './lexicon';
import { normalise, UNSPACED, type Token } from './text';

/** What soft matching reads of an entry (a subset of pairs.ts Prepared). */
export interface SoftEntry {
  text: string;
  toks: Token[];
  content: Set<string>;
  values: Map<string, Token['type']>;
  /** Cached results. */
  /** normalise(text), computed once (normOf): many rules read the folded text of both sides per pair. */
  norm?: string;
  pol?: Map<string, number>;
  /** polarityMap's result when every word is asserted (built once, not per pair). */
  polAll?: Map<string, number>;
  /** Whether some word is negated (hasNegated of pol). */
  polNeg?: boolean;
  /** For each negated word, the words before the negation in its clause (its subject). */
  negSubject?: Map<string, string[]>;
  script?: number;
  items?: Items;
  anchors?: Set<string>;
}

/** One entry pair aligned word by word. */
export interface Alignment {
  /** Weighted Dice of the matched words, 0-1. */
  score: number;
  /** Weighted share of the lighter side's words matched in the other, 0-1. */
  contain: number;
  /** Words of each side matched (any way). */
  matchedA: number;
  matchedB: number;
  /** The matches that were not the same word: "reply~answer (synonym)". */
  links: string[];
  /** Words of each side left unmatched. */
  restA: string[];
  restB: string[];
}

/** Words of a hyphen or slash compound ("host-based" → host, based; "puppeteer/chromium"). */
const NONE: string[] = [];
function parts(w: string): string[] {
  return w.includes('-') || w.includes('/') ? w.split(/[-/]/).filter((x) => x.length >= 3) : NONE;
}

/** Whether a and b differ by one edit (words of 5+ letters, no digits: "item5" / "item6" are two names): a typo. */
function typo(a: string, b: string): boolean {
  if (a.length < 5 || b.length < 5 || Math.abs(a.length - b.length) > 1 || /\d/.test(a) || /\d/.test(b)) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  if (a.length === b.length) return a.slice(i + 1) === b.slice(i + 1);
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

/** The items an alignment compares, computed once per entry: content words and values (by literal). */
interface Items {
  has: (w: string) => boolean;
  list: Array<{ w: string; spec: number; value: boolean; could: boolean }>;
}

function items(p: SoftEntry): Items {
  if (p.items) return p.items;
  const list = [...p.content, ...[...p.values.keys()].filter((v) => !p.content.has(v))].map((w) => {
    const value = p.values.has(w);
    // a word that could match another word than itself: known to the lexicon, a compound, or a possible typo
    return {
      w,
      spec: specificity(w),
      value,
      could: !value && (known(w) || (w.length >= 5 && !/\d/.test(w)) || parts(w).length > 0),
    };
  });
  p.items = { has: (w) => p.content.has(w) || p.values.has(w), list };
  return p.items;
}

/** How a word matches the other side's words: [weight 0-1, how, the other word]. Values match only themselves. */
function bestMatch(x: string, other: Items): [number, string, string] | undefined {
  let best: [number, string, string] | undefined;
  for (const o of other.list) {
    if (o.value || !o.could) continue;
    const y = o.w;
    let m: [number, string, string] | undefined;
    const r = typo(x, y) ? 'typo' : relation(x, y);
    if (r === 'typo') m = [1, 'typo', y];
    else if (r === 'derivation') m = [0.9, 'derivation', y];
    else if (r === 'synonym') m = [0.8, 'synonym', y];
    else if (parts(x).includes(y) || parts(y).includes(x)) m = [0.7, 'compound', y];
    if (m && (!best || m[0] > best[0])) best = m;
  }
  return best;
}

/** Align two entries word by word (see the module doc). */
export function align(a: SoftEntry, b: SoftEntry): Alignment {
  const A = items(a);
  const B = items(b);
  const links: string[] = [];
  const side = (X: Items, Y: Items, flip: boolean): { w: number; m: number; n: number; rest: string[] } => {
    let w = 0;
    let m = 0;
    let n = 0;
    const rest: string[] = [];
    // the other side's words that this side lacks: the only ones a word of this side can be linked to
    let open: Items | undefined;
    for (const x of X.list) {
      w += x.spec;
      let best: [number, string, string] | undefined;
      if (Y.has(x.w)) best = [1, 'same', x.w];
      else if (x.could) {
        open ??= { has: Y.has, list: Y.list.filter((o) => !X.has(o.w)) };
        best = bestMatch(x.w, open);
      }
      if (best) {
        m += x.spec * best[0];
        n++;
        if (best[1] !== 'same') {
          const link = flip ? `${best[2]}~${x.w} (${best[1]})` : `${x.w}~${best[2]} (${best[1]})`;
          if (!links.includes(link)) links.push(link);
        }
      } else rest.push(x.w);
    }
    return { w, m, n, rest };
  };
  const sa = side(A, B, false);
  const sb = side(B, A, true);
  const score = sa.w + sb.w ? (sa.m + sb.m) / (sa.w + sb.w) : 0;
  const light = sa.w <= sb.w ? sa : sb;
  return {
    score,
    contain: light.w ? light.m / light.w : 0,
    matchedA: sa.n,
    matchedB: sb.n,
    links,
    restA: sa.rest,
    restB: sb.rest,
  };
}

/** Words and phrases that put the words after them, in their clause, in the scope of a negation. */
const NEG_EN =
  /\b(?:not|no|never|without|nor|neither|none|nobody|nothing|forbid(?:s|den|ding)?|prohibit(?:s|ed|ing)?|disallow(?:s|ed)?|avoid(?:s|ed|ing)?|refuse[sd]?)\b/g;
/** Preference against ("X over Y", "instead of Y", "rather than Y"): a short scope. */
const AGAINST_EN = /\b(?:over|instead of|rather than)\b/g;
/** Words that negate what comes before them in their clause ("the wsl CLI is absent", "(plugin missing)"). */
const NEG_AFTER_EN = /\b(?:missing|absent|unavailable)\b/g;
const NEG_ZH = /不要|不能|不可|不准|不许|禁止|严禁|切勿|勿|不用|没有|不在|不会|不得/gu;
/** Clause ends: sentence punctuation, brackets, conjunctions that start a clause; CJK full-width punctuation. */
const CLAUSE_END = /[.;:!?()[\]→=—]|\b(?:but|so|then|because|while|whereas|although|though|unless)\b|[。；：！？，]/g;
/** A preference-against scope ends at a preposition that starts a scope of its own ("... over scripts for automation"). */
const AGAINST_END = /\b(?:for|in|on|at|when|with|to|because)\b/g;

/** normalise(p.text) (text.ts), computed once per entry and kept on it (`norm`). */
export function normOf(p: { text: string; norm?: string }): string {
  return (p.norm ??= normalise(p.text));
}

/**
 * Polarity of each content word: -1 when each of its occurrences is in a negation's scope (from the
 * negation to the end of its clause; "over/instead of/rather than" up to the next preposition), +1 when
 * none is, 0 when mixed. Two scopes cancel ("never push without explicit instruction": "instruction"
 * is asserted).
 */
export function polarity(p: SoftEntry): Map<string, number> {
  if (p.pol) return p.pol;
  const s = normOf(p);
  const ends: number[] = [];
  for (const m of s.matchAll(CLAUSE_END)) ends.push(m.index);
  // [from, to, start of the clause, where the negation word is]
  const scopes: Array<[number, number, number, number]> = [];
  const clauseStart = (i: number): number => {
    let from = 0;
    for (const x of ends) if (x < i) from = x + 1;
    return from;
  };
  const endAfter = (i: number, extra?: RegExp): number => {
    let e = s.length;
    for (const x of ends) {
      if (x >= i) {
        e = x;
        break;
      }
    }
    if (extra) {
      extra.lastIndex = i;
      const m = extra.exec(s);
      if (m && m.index < e) e = m.index;
    }
    return e;
  };
  for (const m of s.matchAll(NEG_EN))
    scopes.push([m.index + m[0].length, endAfter(m.index + m[0].length), clauseStart(m.index), m.index]);
  for (const m of s.matchAll(NEG_AFTER_EN)) scopes.push([clauseStart(m.index), m.index, m.index, m.index]);
  for (const m of s.matchAll(AGAINST_EN))
    scopes.push([m.index + m[0].length, endAfter(m.index + m[0].length, AGAINST_END), clauseStart(m.index), m.index]);
  if (UNSPACED.test(s))
    for (const m of s.matchAll(NEG_ZH))
      scopes.push([m.index + m[0].length - 1, endAfter(m.index + m[0].length), clauseStart(m.index), m.index]);
  if (!scopes.length) {
    p.pol = ALL_ASSERTED;
    return p.pol;
  }
  const pol = new Map<string, number>();
  const subject = new Map<string, string[]>();
  for (const t of p.toks) {
    if (t.type !== 'word' || t.at === undefined || !p.content.has(t.t)) continue;
    const inside = scopes.filter(([from, to]) => t.at! >= from && t.at! < to);
    const neg = inside.length % 2 ? -1 : 1;
    const cur = pol.get(t.t);
    pol.set(t.t, cur === undefined || cur === neg ? neg : 0);
    if (neg < 0) {
      // the subject of the negated clause: its Latin-script words before the negation ("Lena" in "Lena does not use Docker")
      const [, , start, at] = inside[0];
      subject.set(
        t.t,
        p.toks
          .filter(
            (u) =>
              u.type === 'word' && !u.cjk && u.at !== undefined && u.at >= start && u.at < at && p.content.has(u.t),
          )
          .map((u) => u.t),
      );
    }
  }
  p.pol = pol;
  p.negSubject = subject;
  return pol;
}

/** The polarity of an entry without any negation (every word asserted; shared, so nothing is kept per entry). */
const ALL_ASSERTED = new Map<string, number>();

/** The polarity map itself, with every content word (+1) for an entry without a negation. */
function polarityMap(p: SoftEntry): Map<string, number> {
  const pol = polarity(p);
  if (pol !== ALL_ASSERTED) return pol;
  p.polAll ??= new Map([...p.content].map((w) => [w, 1]));
  return p.polAll;
}

function hasNegated(pol: Map<string, number>): boolean {
  for (const v of pol.values()) if (v < 0) return true;
  return false;
}

/** Words whose polarity differs between two entries (negated in one, asserted in the other), and those negated in both. */
export function polarityDiff(a: SoftEntry, b: SoftEntry): { conflict: string[]; bothNegated: string[]; agree: number } {
  const conflict: string[] = [];
  a.polNeg ??= hasNegated(polarity(a));
  b.polNeg ??= hasNegated(polarity(b));
  if (!a.polNeg && !b.polNeg) return { conflict, bothNegated: [], agree: 0 };
  const pa = polarityMap(a);
  const pb = polarityMap(b);
  const bothNegated: string[] = [];
  let agree = 0;
  for (const [w, x] of pa) {
    let y = pb.get(w);
    let shown = w;
    if (y === undefined) {
      // a derivational relative or synonym on the other side ("separation" / "separate")
      for (const [v, z] of pb) {
        if (!pa.has(v) && (relation(w, v) || parts(w).includes(v) || parts(v).includes(w))) {
          y = z;
          shown = `${w}~${v}`;
          break;
        }
      }
    }
    if (y === undefined || x === 0 || y === 0) continue;
    if (x !== y) {
      // the negated clause's subject must be the other entry's too ("Lena does not use Docker" / "docker owns ...": no)
      const [neg, other] = x < 0 ? [a, b] : [b, a];
      const subj = neg.negSubject?.get(x < 0 ? w : shown.split('~').pop()!) ?? [];
      if (
        subj.every(
          (u) => other.content.has(u) || [...other.content].some((v) => relation(u, v) || parts(v).includes(u)),
        )
      )
        conflict.push(shown);
    } else if (x < 0) bothNegated.push(shown);
    else agree++;
  }
  return { conflict, bothNegated, agree };
}

/** Share of an entry's words written in a script other than Latin (CJK bigrams, Greek, Thai, Cyrillic ...), 0-1. */
export function otherScript(p: SoftEntry): number {
  if (p.script !== undefined) return p.script;
  let latin = 0;
  let other = 0;
  for (const t of p.toks) {
    if (t.type !== 'word') continue;
    // eslint-disable-next-line no-control-regex
    if (t.cjk || /[^\x00-\x7f\u00c0-\u024f]/.test(t.t)) other++;
    else latin++;
  }
  p.script = latin + other ? other / (latin + other) : 0;
  return p.script;
}

/**
 * Whether two entries are written in two languages of different scripts: one at least a quarter in
 * a non-Latin script, the other under a tenth. Returns a label for the evidence, or undefined.
 */
export function scriptMix(a: SoftEntry, b: SoftEntry): string | undefined {
  const x = otherScript(a);
  const y = otherScript(b);
  if (x >= 0.25 && y < 0.1) return 'the first mostly in a non-Latin script, the second in Latin';
  if (y >= 0.25 && x < 0.1) return 'the first in Latin script, the second mostly in a non-Latin one';
  return undefined;
}

/**
 * The words a translation keeps as written: values, and Latin-script words the lexicon does not know
 * (names, products, code: "RunPod", "PUBLIC_KEY", "#ef4444") — of 3 characters or more.
 */
export function anchors(p: SoftEntry): Set<string> {
  if (p.anchors) return p.anchors;
  const out = new Set<string>();
  for (const t of p.toks) {
    if (t.type === 'date') continue;
    if (t.type !== 'word') out.add(t.t);
    else if (!t.cjk && t.t.length >= 3 && /^[a-z0-9_.+#/-]+$/.test(t.t) && specificity(t.t) === 1 && p.content.has(t.t))
      out.add(t.t);
  }
  p.anchors = out;
  return out;
}
