/**
 * The memory lint runner: opens the stores, reads their entries (and provenance where the store has
 * it), probes the machine for the claims the entries make, and runs the pure `lintEntries`.
 */
import { promises as fs } from 'node:fs';
import type { LintFinding, MemoryEntry, MemoryFile, StoreProblem } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import { problemOf } from '../broken';
import { describeTarget } from '../../core/target';
import { openStore as defaultOpenStore, type MemoryStoreAdapter } from '../index';
import { extractClaims } from './claims';
import { embedEntries, type EmbedOptions } from './encoder';
import { lintEntries } from './index';
import { dirProbe, gatherFacts, localProbe, transportProbe, type MachineProbe } from './machine';
import type { FileTransport } from '../transport';
import type { LintEntry, LintFile, LintInput, LintOptions, LintStore } from './model';
import { configuredEndpoint, embedFromEndpoint, type EmbeddingsEndpoint, type EmbeddingsLimits } from './embeddings';
import { embeddingKey, type StoreEmbeddings } from '../types';

/** What runLint needs from outside; every field has a default (the real thing). */
export interface RunLintDeps {
  /** Store opener (default: sidecar/memory openStore). */
  openStore?: (spec: string) => MemoryStoreAdapter;
  /**
   * The machine to check stale claims against. Default: the target's local root (target.describe
   * `localRoot`: dir:/btrfs: targets); else the machine the stores are on when that is another one
   * (a store over SSH: its commands, paths and versions are probed there); none for targets without
   * a local root (qemu:/proxmox://: cannot be inspected from the sidecar, stale claims are then not
   * checked); the local machine when no target is given. `null` turns stale checks off.
   */
  probe?: MachineProbe | null;
  /** ms since the epoch, for the age rule (default Date.now()). */
  now?: number;
  /** Ask each store for provenance (default true; costs one history lookup per entry). */
  provenance?: boolean;
  /** Threshold overrides. */
  options?: Partial<LintOptions>;
  /** Overall time for machine probes (ms, default 5000). */
  probeDeadlineMs?: number;
  /**
   * Comparing entries by meaning (encoder.ts embedEntries): entries without a store's own vector get
   * one from the bundled sentence encoder, up to a bound; `false` turns it off (the lexical rules
   * alone, no note). Default: the bundled encoder, MAX_ENCODED entries.
   */
  semantic?: EmbedOptions | false;
  /**
   * The embeddings endpoint for entries without a vector of their store's own (embeddings.ts).
   * Default: `p.embeddings`, else env AGENTKEEP_EMBEDDINGS_URL / AGENTKEEP_EMBEDDINGS_MODEL (none:
   * off). `null` turns it off whatever is configured.
   */
  embeddings?: EmbeddingsEndpoint | null;
  /** Bounds of the endpoint's use (DEFAULT_EMBEDDINGS_LIMITS). */
  embeddingsLimits?: Partial<EmbeddingsLimits>;
  /** Read the stores' own vectors (StoreLintProfile.embeddings; default true). */
  storeVectors?: boolean;
  /** Size cap of one store vector file, bytes (default: the store's, 256 MiB). */
  storeVectorMaxBytes?: number;
  /** The pure core (default lintEntries); a test passes a spy to see the input. */
  lint?: (input: LintInput) => LintFinding[];
}

/**
 * LintEntry.embedding for the entries of one store from its own vectors (StoreLintProfile.embeddings,
 * keyed by file and id), and its notes as `store` findings (info). A store whose vectors cannot be
 * read gives a warning and no vectors: the lint goes on by the words.
 */
async function storeVectors(adapter: MemoryStoreAdapter, files: LintFile[], maxBytes?: number): Promise<LintFinding[]> {
  const profile = adapter.lintProfile;
  if (!profile?.embeddings || !files.some((f) => f.entries.length)) return [];
  let got: StoreEmbeddings;
  try {
    got = await profile.embeddings(maxBytes !== undefined ? { maxBytes } : undefined);
  } catch (err) {
    const p = problemOf(err);
    return [
      {
        kind: 'store',
        severity: 'warning',
        entries: [],
        stores: [adapter.spec],
        message: `The vectors of ${adapter.spec} could not be read: ${p.message} Its entries were compared by their words only.`,
        evidence: [p.message],
        ...(p.hint ? { suggestion: p.hint } : {}),
      },
    ];
  }
  for (const f of files)
    for (const e of f.entries) {
      const v = got.vectors.get(embeddingKey(f.file, e.id));
      if (v) e.embedding = { model: v.model, vector: v.vector };
    }
  return got.notes.map((n) => ({
    kind: 'store' as const,
    severity: 'info' as const,
    entries: [],
    stores: [adapter.spec],
    message: `Lint note: ${n}`,
  }));
}

/**
 * Whether the store keeps a write history, so that "no trace" means untraceable (not "unknown"):
 * the adapter's StoreLintProfile.keepsHistory (Hermes: while state.db exists), else yes.
 */
async function hasHistory(store: MemoryStoreAdapter): Promise<boolean> {
  return (await store.lintProfile?.keepsHistory?.().catch(() => false)) ?? true;
}

/**
 * What "~" means for these stores: the agent's home, from each adapter's StoreLintProfile.agentHome
 * (Hermes: a home at <home>/.hermes gives <home>, a home elsewhere null). Stores naming different
 * homes, or one that cannot know, give null (unknown: ~ paths are not checked); when no store has an
 * opinion, undefined (the sidecar user's home, the default of the probes).
 */
export function agentHome(adapters: ReadonlyArray<Pick<MemoryStoreAdapter, 'lintProfile'>>): string | null | undefined {
  const homes = new Set<string | null>();
  for (const a of adapters) {
    const h = a.lintProfile?.agentHome?.();
    if (h !== undefined) homes.add(h);
  }
  if (homes.size === 0) return undefined;
  const [only] = homes;
  return homes.size === 1 ? only : null;
}

/**
 * The other machine the stores are on (StoreLintProfile.machine: a store reached over SSH), when
 * every store is on that one machine; `mixed` names the machines when they differ (stale claims
 * cannot be judged against one of them for all); undefined when every store is on this machine.
 */
export function storeMachine(adapters: ReadonlyArray<Pick<MemoryStoreAdapter, 'lintProfile'>>): {
  io?: FileTransport;
  mixed?: string[];
} {
  const where = new Map<string, FileTransport | undefined>();
  for (const a of adapters) {
    const io = a.lintProfile?.machine;
    where.set(io?.where ?? 'this machine', io);
  }
  const remote = [...where.values()].filter((io): io is FileTransport => !!io);
  if (!remote.length) return {};
  if (where.size > 1) return { mixed: [...where.keys()] };
  return { io: remote[0] };
}

/**
 * The probe for the target, or why there is none (`skipped`: stale claims are then not checked).
 * Stores on another machine (storeMachine) are checked there, unless a target with a local root
 * names the machine's files explicitly.
 */
async function machineProbe(
  target: string | undefined,
  home: string | null | undefined,
  deps: RunLintDeps,
  adapters: MemoryStoreAdapter[] = [],
): Promise<{ probe?: MachineProbe; skipped?: string }> {
  if (deps.probe !== undefined) return deps.probe ? { probe: deps.probe } : {};
  const m = storeMachine(adapters);
  const t = target ? describeTarget(target) : undefined;
  if (m.mixed && !t?.localRoot) {
    return {
      skipped:
        `Stale claims were not checked: the stores are on different machines (${m.mixed.join(', ')}), and a ` +
        'claim is about the machine its agent runs on. Lint the stores of each machine on their own.',
    };
  }
  if (m.io && !t?.localRoot) return { probe: transportProbe(m.io, { home }) };
  if (!t) return { probe: localProbe({ home }) };
  const root = t.localRoot;
  if (root) {
    const st = await fs.stat(root).catch(() => undefined);
    if (!st?.isDirectory()) {
      throw new AgentKeepError(
        'BadTarget',
        `Target ${t.target}: ${root} ${st ? 'is not a directory' : 'does not exist'}, so the claims in memory cannot be checked against it.`,
        `Pass the directory that holds the agent machine's root filesystem (with etc/ and usr/), e.g. --target dir:/srv/agent-root, or leave out --target to check against this machine.`,
      );
    }
    return { probe: await dirProbe(root, t.target, { home }) };
  }
  return {
    skipped: `Stale claims were not checked: ${t.target} is a ${t.backend} target, whose files the sidecar cannot read. To check them, lint on that machine, or pass --target dir:<its root filesystem mounted here>.`,
  };
}

/**
 * The finding for a store whose history could not be read (a damaged state.db or history.db): which
 * file, that provenance is unavailable, which checks therefore did not run (the store's own
 * StoreLintProfile.historyChecks among them, e.g. Hermes entry ages), and the fix.
 */
function historyFinding(h: {
  store: string;
  historyChecks: readonly string[];
  problem: StoreProblem;
  entries: number;
}): LintFinding {
  const skipped = [
    'untraceable (whether a tool call in the history wrote each entry)',
    ...h.historyChecks,
    'which of two contradicting entries is newer',
  ];
  return {
    kind: 'store',
    severity: 'error',
    entries: [],
    stores: [h.store],
    message:
      `Provenance is unavailable for ${h.entries} ${h.entries === 1 ? 'entry' : 'entries'} of ${h.store}: ` +
      `${h.problem.message} These checks did not run for them: ${skipped.join('; ')}. The other checks ran.`,
    evidence: [h.problem.message],
    ...(h.problem.hint ? { suggestion: h.problem.hint } : {}),
  };
}

function toLintEntry(e: MemoryEntry): LintEntry {
  return {
    id: e.id,
    text: e.text,
    ...(e.area ? { area: e.area } : {}),
    ...(e.createdAt ? { createdAt: e.createdAt } : {}),
    ...(e.updatedAt ? { updatedAt: e.updatedAt } : {}),
    ...(e.source ? { source: e.source } : {}),
  };
}

/**
 * Lint the entries of `p.stores` (memory.lint).
 *
 * For each store: `adapter.list()` gives the files and entries (usage and limits for Hermes); the
 * adapter's StoreLintProfile gives the raw text of the files the drift rule checks (Hermes
 * MEMORY.md/USER.md), whether it keeps a history and the agent's home for "~"; `adapter.provenance(entry)`
 * (when the store has it and keeps a history, e.g. Hermes with state.db) marks entries with no recorded write
 * as untraceable and supplies createdAt/updatedAt from the first/last write, so contradictions can
 * say which entry is newer. Claims about the machine (paths, commands, tool versions, OS release)
 * are probed on the target (see RunLintDeps.probe) within `probeDeadlineMs`. Entries are compared by
 * meaning too (RunLintDeps.semantic): those without a store's own vector get one from the bundled
 * sentence encoder (up to MAX_ENCODED entries; a `store` info note says when it skipped, or when the
 * encoder's packages are missing).
 * A store whose history cannot be read (provenance `unavailable`, or provenance throwing: e.g. a
 * damaged state.db) gets one `store` error naming the file, the fix and the checks that did not run
 * (untraceable, Hermes entry ages, which contradicting entry is newer); its entries are then not
 * untraceable, and every other check still runs. Broken files (MemoryFile.broken) are `store` errors.
 * Vectors (LintEntry.embedding): each store's own (StoreLintProfile.embeddings: Agent Zero's
 * index.faiss rows, mem0's Qdrant points), then, when an embeddings endpoint is configured
 * (`p.embeddings`, env AGENTKEEP_EMBEDDINGS_URL / _MODEL; embeddings.ts), the endpoint's for the
 * entries still without one; what was left out is a lint note, a failing endpoint a `store` warning.
 *
 * @param p.stores store names `<kind>:/abs/path` (at least one)
 * @param p.target optional target (dir:/abs, btrfs:/abs, qemu:..., proxmox://...) to check claims against
 * @param p.embeddings optional OpenAI-compatible endpoint {url, model} (see configuredEndpoint)
 * @returns {findings} sorted errors → warnings → info (see lintEntries)
 * @throws AgentKeepError InvalidParams (no store; an embeddings URL refused or without a model),
 *   BadStore, StoreNotFound, FileError, BadTarget
 */
export async function runLint(
  p: { stores: string[]; target?: string; embeddings?: { url?: string; model?: string } },
  deps: RunLintDeps = {},
): Promise<{ findings: LintFinding[] }> {
  if (!p.stores?.length) {
    throw new AgentKeepError(
      'InvalidParams',
      'memory lint needs at least one store.',
      'Pass --store hermes:/abs/path/to/.hermes (repeatable).',
    );
  }
  const open = deps.openStore ?? defaultOpenStore;
  // checked before any store is read: a refused URL is a clear error, not a half-done lint
  const endpoint = deps.embeddings === undefined ? configuredEndpoint(p.embeddings) : deps.embeddings;
  const vectorFindings: LintFinding[] = [];
  const stores: LintStore[] = [];
  const adapters: MemoryStoreAdapter[] = [];
  // stores whose history could not be read: the checks that need provenance did not run for them
  const noHistory: Array<{ store: string; historyChecks: readonly string[]; problem: StoreProblem; entries: number }> =
    [];
  // stores whose own config cannot be used (a warning each: the agent runs on its defaults)
  const configFindings: LintFinding[] = [];
  for (const spec of p.stores) {
    const adapter = open(spec);
    adapters.push(adapter);
    let files: MemoryFile[];
    try {
      files = await adapter.list();
    } catch (err) {
      // nothing of this store could be read (every file damaged: mem0's storage.sqlite, Agent Zero's
      // index.pkl): a broken store, one `store` error; the other stores are still linted
      if (!(err instanceof AgentKeepError && err.kind === 'FileError')) throw err;
      const broken = problemOf(err);
      stores.push({
        store: adapter.spec,
        files: [{ kind: adapter.kind, file: adapter.location, entries: [], broken }],
      });
      continue;
    }
    const withHistory =
      deps.provenance !== false && typeof adapter.provenance === 'function' && (await hasHistory(adapter));
    const lintFiles: LintFile[] = [];
    let problem: StoreProblem | undefined;
    let unknown = 0;
    for (const f of files) {
      if (f.pending) continue; // staged writes (Hermes pending/memory): not memory yet
      const entries: LintEntry[] = [];
      for (const e of f.entries) {
        const le = toLintEntry(e);
        if (withHistory) {
          try {
            const prov = await adapter.provenance!(e);
            if (prov.unavailable) {
              // unknown, not "no trace": no untraceable finding, no times from the history
              problem ??= prov.unavailable;
              unknown++;
            } else {
              le.provenance = { traced: prov.traces.length > 0, ...(prov.note ? { note: prov.note } : {}) };
              const times = prov.traces
                .map((t) => t.time)
                .filter((t): t is string => !!t)
                .sort();
              if (times.length) {
                le.createdAt ??= times[0];
                le.updatedAt ??= times[times.length - 1];
              }
            }
          } catch (err) {
            problem ??= problemOf(err); // provenance unknown for this entry: said once per store below
            unknown++;
          }
        }
        entries.push(le);
      }
      // the raw text for the drift rule where the store checks drift (broken or missing file: nothing to drift)
      const raw = f.broken ? undefined : await adapter.lintProfile?.driftText?.(f).catch(() => undefined);
      lintFiles.push({
        kind: f.kind,
        file: f.file,
        entries,
        ...(f.usage ? { usage: f.usage } : {}),
        ...(raw !== undefined ? { raw } : {}),
        ...(f.warnings?.length ? { warnings: f.warnings } : {}),
        ...(f.broken ? { broken: f.broken } : {}),
      });
    }
    if (problem) {
      const historyChecks = adapter.lintProfile?.historyChecks ?? [];
      noHistory.push({ store: adapter.spec, historyChecks, problem, entries: unknown });
      // the adapter's own warning about the same file is said by that finding
      const said = problem.message;
      for (const lf of lintFiles) if (lf.warnings) lf.warnings = lf.warnings.filter((w) => !w.includes(said));
    }
    // the store's config cannot be used (Hermes config.yaml does not parse): one finding, not one per file
    const cp = await adapter.configProblem?.().catch(() => undefined);
    if (cp) {
      configFindings.push({
        kind: 'store',
        severity: 'warning',
        entries: [],
        stores: [adapter.spec],
        message: `The config of ${adapter.spec} cannot be used: ${cp.problem.message}`,
        evidence: [cp.file],
        ...(cp.problem.hint ? { suggestion: cp.problem.hint } : {}),
      });
      const said = cp.problem.message;
      for (const lf of lintFiles) if (lf.warnings) lf.warnings = lf.warnings.filter((w) => !w.includes(said));
    }
    if (deps.storeVectors !== false)
      vectorFindings.push(...(await storeVectors(adapter, lintFiles, deps.storeVectorMaxBytes)));
    stores.push({ store: adapter.spec, files: lintFiles });
  }
  if (endpoint) vectorFindings.push(...(await embedFromEndpoint(endpoint, stores, deps.embeddingsLimits)));
  const input: LintInput = { stores, now: deps.now ?? Date.now(), ...(deps.options ? { options: deps.options } : {}) };
  const { probe, skipped } = await machineProbe(p.target, agentHome(adapters), deps, adapters);
  const claims = stores.flatMap((s) => s.files.flatMap((f) => f.entries.flatMap((e) => extractClaims(e.text))));
  if (probe && claims.length) input.machine = await gatherFacts(claims, probe, { deadlineMs: deps.probeDeadlineMs });
  // the bundled encoder's vectors for the entries still without one (issue 12 item 2); what was not
  // encoded is said in a note
  if (deps.semantic !== false) vectorFindings.push(...(await embedEntries(input, deps.semantic ?? {})));
  const findings = (deps.lint ?? lintEntries)(input);
  for (const f of vectorFindings) if (f.severity === 'info') findings.push(f);
  for (const f of vectorFindings) if (f.severity !== 'info') findings.unshift(f);
  for (const h of noHistory) findings.unshift(historyFinding(h));
  findings.unshift(...configFindings);
  // Say what the stale rule could not look at, so that no stale finding is not read as "all true".
  const limit = skipped ?? (claims.length ? probe?.limits : undefined);
  if (limit) {
    findings.push({
      kind: 'store',
      severity: 'info',
      entries: [],
      stores: stores.map((s) => s.store),
      message: limit,
      evidence: [
        `${claims.length} claim${claims.length === 1 ? '' : 's'} about the machine in these entries (paths, commands, tool versions, OS release)`,
      ],
    });
  }
  return { findings };
}
