/**
 * Comparing memory entries by meaning (issue 12 item 2): the cosine similarity of two entries'
 * sentence vectors (`LintEntry.embedding`: a store's own vectors, or the bundled encoder's, see
 * encoder.ts), as one more signal next to the lexical rules. Vectors are compared only when their
 * `model` strings are equal. Pure and synchronous.
 *
 * Thresholds are per model: calibrated on the dev split of test/cases/memory-real for the bundled
 * Universal Sentence Encoder; for any other model (a store's own, unknown to us) a conservative
 * default (docs/memory-lint.md "Comparing by meaning").
 */
import { BUNDLED_LABEL, BUNDLED_MODEL } from './encoder';
import { known } from './lexicon';
import { canon } from './text';

/** The thresholds of one model. */
export interface SemanticThresholds {
  /** Cosine similarity from which two entries become a candidate pair for the pair rules. */
  candidate: number;
  /**
   * Cosine similarity from which a pair that no rule decided, and in which nothing differs, is a
   * near-duplicate, when its words also align in part (pairs.ts SEMANTIC_ALIGN).
   */
  duplicate: number;
  /** From this similarity on, no word overlap is needed. */
  strong: number;
  /** From this similarity on (below `duplicate`), a pair whose words align as a rewording's do (pairs.ts SEMANTIC_ALIGN_RELATED) is a near-duplicate. */
  related: number;
  /** The model reads English only: pairs with an entry mostly in another script are not judged by it. */
  englishOnly: boolean;
  /** Name for evidence. */
  label: string;
}

/** The bundled Universal Sentence Encoder (English): calibrated on the dev split. */
export const BUNDLED_THRESHOLDS: SemanticThresholds = {
  candidate: 0.7,
  duplicate: 0.76,
  strong: 0.83,
  related: 0.55,
  englishOnly: true,
  label: BUNDLED_LABEL,
};

/** Any other model (a store's own vectors): conservative, since nothing was calibrated on it. */
export const DEFAULT_THRESHOLDS: Omit<SemanticThresholds, 'label'> = {
  candidate: 0.8,
  duplicate: 0.92,
  strong: 0.96,
  related: 0.85,
  englishOnly: false,
};

/** The thresholds for vectors of `model`. */
export function thresholdsFor(model: string): SemanticThresholds {
  if (model === BUNDLED_MODEL) return BUNDLED_THRESHOLDS;
  return { ...DEFAULT_THRESHOLDS, label: `the store's ${model} vectors` };
}

/** An entry's vector as the pair rules read it. */
export interface Vec {
  model: string;
  vector: Float32Array;
}

/** Cosine similarity of two vectors (any length; 0 when either is zero or the lengths differ). */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length || !a.length) return 0;
  let s = 0;
  let na = 0;
  let nb = 0;
  for (let k = 0; k < a.length; k++) {
    s += a[k] * b[k];
    na += a[k] * a[k];
    nb += b[k] * b[k];
  }
  return na > 0 && nb > 0 ? s / Math.sqrt(na * nb) : 0;
}

/** The similarity of two entries' vectors, or undefined when one has none or their models differ. */
export function similarity(a: Vec | undefined, b: Vec | undefined): number | undefined {
  if (!a || !b || a.model !== b.model) return undefined;
  return cosine(a.vector, b.vector);
}

/** Share of an entry's letters in the Latin script (what an English-only encoder reads). */
export function latinShare(text: string): number {
  const letters = text.match(/\p{L}/gu)?.length ?? 0;
  if (!letters) return 1;
  return (text.match(/\p{Script=Latin}/gu)?.length ?? 0) / letters;
}

/** English function words (the lexicon knows content words only). */
const ENGLISH_FUNCTION = new Set(
  'a an the of to in on at for from with by and or but not no is are was be been has have had do does did it its this that these those as if then than so can must should will would may when where which who what all any each every only also there here he she they we you i my his her their our your'.split(
    ' ',
  ),
);

/**
 * Whether a text reads as English, for an English-only encoder: mostly Latin letters, and at least
 * 35% of its words (2+ letters) English function words or words of the English lexicon (lexicon.ts).
 * "L'utente vuole risposte fulminee" is Latin script but not English.
 */
export function englishLike(text: string): boolean {
  if (latinShare(text) < 0.9) return false;
  const words = text.toLowerCase().match(/\p{Script=Latin}{2,}/gu) ?? [];
  if (!words.length) return true;
  let hit = 0;
  for (const w of words) if (ENGLISH_FUNCTION.has(w) || known(w) || known(canon(w))) hit++;
  return hit / words.length >= 0.35;
}

/** Vectors compared all pairs at most this many per model; above it, no candidates by meaning (a lint note says so). */
export const MAX_SEMANTIC_PAIRS_ENTRIES = 2_000;

/**
 * Candidate pairs by meaning: pairs [x, y] (x < y, indices into `vecs`) of entries whose vectors of
 * one model have cosine similarity >= that model's `candidate` threshold (`pairs`: every pair rule
 * judges them), or between its `related` and `candidate` thresholds (`weak`: only a near-duplicate
 * by meaning may come of them). All pairs per model, so
 * only for up to MAX_SEMANTIC_PAIRS_ENTRIES vectors of a model (1.2 s at 2,000 vectors of 512
 * dimensions); a larger model group is skipped and counted in `skipped`.
 */
export function semanticCandidates(vecs: Array<Vec | undefined>): {
  pairs: Array<[number, number]>;
  weak: Array<[number, number]>;
  skipped: number;
} {
  const byModel = new Map<string, number[]>();
  vecs.forEach((v, i) => {
    if (v) (byModel.get(v.model) ?? byModel.set(v.model, []).get(v.model)!).push(i);
  });
  const pairs: Array<[number, number]> = [];
  const weak: Array<[number, number]> = [];
  let skipped = 0;
  for (const [model, ids] of byModel) {
    if (ids.length > MAX_SEMANTIC_PAIRS_ENTRIES) {
      skipped += ids.length;
      continue;
    }
    const { candidate: t, related } = thresholdsFor(model);
    const floor = Math.min(t, related);
    // unit vectors once, in one flat buffer (rows of dimension d), then dot products; vectors of
    // another length than the first (a store mixing dimensions under one model name) are left out
    const d = vecs[ids[0]]!.vector.length;
    const rows = ids.filter((i) => vecs[i]!.vector.length === d);
    const m = rows.length;
    const flat = new Float64Array(m * d);
    rows.forEach((i, r) => {
      const v = vecs[i]!.vector;
      let s = 0;
      for (let k = 0; k < d; k++) s += v[k] * v[k];
      const n = Math.sqrt(s) || 1;
      for (let k = 0; k < d; k++) flat[r * d + k] = v[k] / n;
    });
    for (let x = 0; x < m; x++) {
      const ox = x * d;
      for (let y = x + 1; y < m; y++) {
        const oy = y * d;
        let s0 = 0;
        let s1 = 0;
        let k = 0;
        for (; k + 1 < d; k += 2) {
          s0 += flat[ox + k] * flat[oy + k];
          s1 += flat[ox + k + 1] * flat[oy + k + 1];
        }
        if (k < d) s0 += flat[ox + k] * flat[oy + k];
        const s = s0 + s1;
        if (s >= floor) (s >= t ? pairs : weak).push(rows[x] < rows[y] ? [rows[x], rows[y]] : [rows[y], rows[x]]);
      }
    }
  }
  return { pairs, weak, skipped };
}
