/**
 * The plain input model of the memory lint (sidecar/memory/lint). `lintEntries` reads only this: no
 * files, no processes, no clock (pass `now`). The runner (run.ts) builds it from the store adapters
 * (`MemoryStoreAdapter.list()` / `provenance()`) and from probes of the machine; tests and the
 * labelled cases (test/cases/memory-lint) build it by hand.
 *
 *   LintInput
 *     stores[]          one per store (`hermes:/abs/home`, `agent-zero:/abs/root`, ...)
 *       files[]         one per memory file (Hermes MEMORY.md, USER.md, SOUL.md; an Agent Zero area ...)
 *         kind          MemoryFile.kind: hermes-memory | hermes-user | hermes-soul | agent-zero-main | mem0 ...
 *         usage?        {chars, limit} in characters (Hermes counts len("\n§\n".join(entries)))
 *         raw?          the file's text as read, for the hand-edit drift rule (Hermes files only)
 *         entries[]     {id, text, area?, createdAt?, updatedAt?, source?, provenance?}
 *     machine?          facts probed on the machine (see MachineFacts) for the stale rule
 *     now?              ms since the epoch, for the age rule (default: no age findings)
 *     options?          thresholds (LintOptions)
 */

/** Whether a tool call in the store's history wrote the entry (Hermes: a `memory` tool call in state.db). */
export interface LintProvenance {
  /** true: at least one write is on record; false: the history exists and holds no write of this entry. */
  traced: boolean;
  /** Why not, in the store's words (e.g. "no memory tool call in state.db matches this text"). */
  note?: string;
}

/** One memory entry. */
export interface LintEntry {
  /** Stable id (Hermes: sha256 of the text, 12 hex chars; Agent Zero, mem0: the store's id). Unique within the input. */
  id: string;
  text: string;
  /** Agent Zero area, or Hermes memory | user | soul | skill | archive. */
  area?: string;
  /** ISO 8601, where the store keeps time (or derived from provenance). */
  createdAt?: string;
  /** ISO 8601, where the store keeps time (or derived from provenance). */
  updatedAt?: string;
  /** Where it came from in the store's words (knowledge source, session source ...). */
  source?: string;
  /** Absent = unknown (the store keeps no history, or it was not asked); only `traced: false` is a finding. */
  provenance?: LintProvenance;
  /**
   * The entry's embedding, where one is known: the store's own vector (Agent Zero: its row of
   * `index.faiss`; mem0: its local Qdrant point's vector), else one from the optional user-configured
   * OpenAI-compatible embeddings endpoint (run.ts, embeddings.ts), else the bundled sentence encoder's
   * (encoder.ts, model `bundled:universal-sentence-encoder`, up to a bound). Vectors of two entries are compared
   * only when their `model` strings are equal (and their lengths are): vectors of two models live in
   * different spaces, and a cosine between them means nothing (semantic.ts).
   * `model`: who made the vector, e.g. `huggingface/sentence-transformers/all-MiniLM-L6-v2` (Agent
   * Zero's embedding.json), `openai/text-embedding-3-small` (mem0's embedder config), the endpoint's
   * model name as configured, or `agent-zero:unknown-model <dir>` / `mem0:unknown-model <dir>` when the
   * store does not say (named with the store or memory subdir, so two unknown models are never compared). `vector`: the float32 components as stored (not normalised).
   */
  embedding?: { model: string; vector: Float32Array };
}

/** One memory file of a store. */
export interface LintFile {
  /** MemoryFile.kind, e.g. hermes-memory. Drift and the Hermes budget wording apply to hermes-memory / hermes-user. */
  kind: string;
  /** Absolute path of the file (or database). */
  file: string;
  /** Characters used and the limit, where the store has a budget. */
  usage?: { chars: number; limit: number };
  /** The file's text as read (Hermes files), for the drift rule. */
  raw?: string;
  entries: LintEntry[];
  /** Problems the adapter found while reading (non-durable config, embedding model mismatch ...): each becomes a `store` finding. */
  warnings?: string[];
  /**
   * The file is broken (MemoryFile.broken: unreadable, a directory, not valid UTF-8, a damaged
   * index): an error `store` finding; its entries (if any could be read) are still checked.
   */
  broken?: { message: string; hint?: string };
}

/** One store. */
export interface LintStore {
  /** The store name, `<kind>:/abs/path`. */
  store: string;
  files: LintFile[];
}

/** Result of probing one path claim. */
export interface PathFact {
  /** true / false; absent key in MachineFacts.paths = not checked. */
  exists: boolean;
  /** The path actually checked (e.g. inside the target directory). */
  checked: string;
}

/** Result of probing one command or tool. */
export interface CommandFact {
  /** Whether the command was found (on PATH locally, or in the bin directories of a target root). */
  found: boolean;
  /** Version reported by `<tool> --version` (first version-looking string), when run. */
  version?: string;
  /** Where it was found, or the command line that was run, for the evidence. */
  detail?: string;
}

/** Facts about the machine, probed by run.ts (or given by a test). Only claims present here are judged. */
export interface MachineFacts {
  /** Human name of the machine, e.g. "this machine" or "dir:/srv/agent". */
  where: string;
  /** Keyed by the path as written in the memory (e.g. "~/.ssh/id_ed25519"). */
  paths?: Record<string, PathFact>;
  /** Keyed by the command / tool name (lower case), e.g. "pnpm", "node", "python3". */
  commands?: Record<string, CommandFact>;
  /** Operating system from /etc/os-release: ID (debian) and VERSION_ID (12). */
  os?: { id: string; versionId?: string; detail?: string };
}

/** Thresholds. Defaults (DEFAULT_LINT_OPTIONS) are tuned on the dev split of test/cases/memory-lint. */
export interface LintOptions {
  /** Entries older than this many days get an `age` finding (info). Default 90. */
  maxAgeDays: number;
  /** Candidate pairs: minimum Jaccard of the masked token sets (values, negations, antonyms masked). */
  candidateJaccard: number;
  /** Candidate pairs also: minimum weighted containment of the lighter masked set in the other (0 = off). */
  candidateContainment: number;
  /** Near-duplicate: minimum word-shingle Jaccard (unigrams + bigrams of stemmed content tokens). */
  nearJaccard: number;
  /** Near-duplicate: minimum containment of the smaller token set in the larger one. */
  nearContainment: number;
  /** Near-duplicate for short entries (<= shortChars): minimum character-trigram Jaccard. */
  nearTrigram: number;
  /** Entries up to this many characters count as short. */
  shortChars: number;
}

/** The whole input of lintEntries. */
export interface LintInput {
  stores: LintStore[];
  machine?: MachineFacts;
  /** ms since the epoch; without it the age rule is off. */
  now?: number;
  options?: Partial<LintOptions>;
}
