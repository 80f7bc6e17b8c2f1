/**
 * The English lexicon of the memory lint, read from the compact file derived from WordNet 3.1
 * (wordnet-lexicon.ts, made by scripts/build-wordnet-lexicon.ts; licence there): lemmas, synonyms
 * (a shared main-sense concept), derivational families and antonyms of about 10,000 common words.
 * Parsed once, on first use (about 185 KiB of text, a few ms). Pure functions, no I/O.
 */
import { WORDNET_ANTONYMS, WORDNET_WORDS } from './wordnet-lexicon';

interface Lex {
  /** Parts of speech (n, v, a, r), frequency class (0-9), concepts, family id (-1 none). */
  words: Map<string, { pos: string; freq: number; concepts: number[]; family: number }>;
  /** Antonym concepts: concept id → ids. */
  antonyms: Map<number, Set<number>>;
}

let lex: Lex | undefined;

function load(): Lex {
  if (lex) return lex;
  const words: Lex['words'] = new Map();
  for (const line of WORDNET_WORDS.split('\n')) {
    const [w, pf, cs, fam] = line.split(' ');
    words.set(w, {
      pos: pf.slice(0, -1),
      freq: Number(pf.slice(-1)),
      concepts: cs && cs !== '-' ? cs.split(',').map((c) => parseInt(c, 36)) : [],
      family: fam ? parseInt(fam, 36) : -1,
    });
  }
  const antonyms: Lex['antonyms'] = new Map();
  for (const line of WORDNET_ANTONYMS.split('\n')) {
    const [x, y] = line.split(' ').map((c) => parseInt(c, 36));
    (antonyms.get(x) ?? antonyms.set(x, new Set()).get(x)!).add(y);
    (antonyms.get(y) ?? antonyms.set(y, new Set()).get(y)!).add(x);
  }
  lex = { words, antonyms };
  return lex;
}

/** WordNet's detachment rules (morphy), per part of speech: [suffix, replacement]. */
const DETACH: Record<string, Array<[string, string]>> = {
  n: [
    ['ses', 's'],
    ['xes', 'x'],
    ['zes', 'z'],
    ['ches', 'ch'],
    ['shes', 'sh'],
    ['men', 'man'],
    ['ies', 'y'],
    ['s', ''],
  ],
  v: [
    ['ies', 'y'],
    ['es', 'e'],
    ['es', ''],
    ['ed', 'e'],
    ['ed', ''],
    ['ing', 'e'],
    ['ing', ''],
    ['s', ''],
  ],
  a: [
    ['er', ''],
    ['est', ''],
    ['er', 'e'],
    ['est', 'e'],
  ],
};

/**
 * The WordNet lemma of an inflected word ("answers" → "answer", "handled" → "handle", "running" →
 * "run"), when the lexicon holds it with a matching part of speech; undefined otherwise (the caller
 * falls back to its own stemmer). Words of 3 letters or fewer are left alone.
 */
export function wordnetLemma(w: string): string | undefined {
  if (w.length <= 3 || /[^a-z]/.test(w)) return undefined;
  const { words } = load();
  for (const pos of ['v', 'n', 'a']) {
    for (const [suf, rep] of DETACH[pos]) {
      if (!w.endsWith(suf) || w.length - suf.length < 2) continue;
      const base = w.slice(0, w.length - suf.length) + rep;
      if (words.get(base)?.pos.includes(pos)) return base;
      // doubled final consonant: "stopped" → "stop", "running" → "run"
      if (
        (suf === 'ed' || suf === 'ing') &&
        !rep &&
        /([b-df-hj-np-tv-z])\1$/.test(base) &&
        words.get(base.slice(0, -1))?.pos.includes('v')
      )
        return base.slice(0, -1);
    }
  }
  return words.has(w) ? w : undefined;
}

/** Whether the lexicon knows the word (a common English word with a synonym, antonym or derivation). */
export function known(w: string): boolean {
  return load().words.has(w);
}

/**
 * How much a word says about what an entry is about, 0.35-1: a word the lexicon does not know (a
 * name, a tool, a term) 1; a common word less the more often it was tagged (frequency class 0-9).
 */
export function specificity(w: string): number {
  const e = load().words.get(w);
  return e ? 1 - 0.065 * e.freq : 1;
}

/** Concept keys of a word for the candidate search ("^c12", and "^f3" for its derivational family). */
export function conceptKeys(w: string): string[] {
  const e = load().words.get(w);
  if (!e) return [];
  const out = e.concepts.map((c) => `^c${c}`);
  if (e.family >= 0) out.push(`^f${e.family}`);
  return out;
}

/**
 * How two different words are related in the lexicon: "derivation" (one family: "configure" /
 * "configuration"), "synonym" (a main sense in common: "reply" / "answer"), or undefined.
 */
export function relation(a: string, b: string): 'derivation' | 'synonym' | undefined {
  if (a === b) return undefined;
  const { words } = load();
  const x = words.get(a);
  const y = words.get(b);
  if (!x || !y) return undefined;
  if (x.family >= 0 && x.family === y.family) return 'derivation';
  for (const c of x.concepts) if (y.concepts.includes(c)) return 'synonym';
  return undefined;
}

/** Whether a main sense of `a` is the antonym of a main sense of `b` (and they share none): "short" / "long". */
export function wordnetAntonyms(a: string, b: string): boolean {
  if (a === b) return false;
  const { words, antonyms } = load();
  const x = words.get(a);
  const y = words.get(b);
  if (!x || !y || x.concepts.some((c) => y.concepts.includes(c))) return false;
  return x.concepts.some((c) => y.concepts.some((d) => antonyms.get(c)?.has(d)));
}
