/**
 * Core: the restore-point services behind the CLI and both servers (CoreApi). Orchestrates a target's
 * machine backend (sidecar/machine), the agent-state capture of memory stores (sidecar/memory), the
 * journal, the shared object store, locks and garbage collection. See sidecar/core/state.ts for the
 * state-dir layout.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { z } from 'zod';
import { version as packageVersion } from '../../package.json';
import { Methods, type ChangeSummary, type ParamsOf, type ProgressParams, type ResultOf, type RestorePoint, type Scope } from '../protocol';
import { backendFor, type MachineBackend, type PathFilter } from '../machine';
import { discoverAgents as discoverProxmoxAgents, guestFileRead, guestFileWrite, ProxmoxBackend } from '../machine/proxmox';
import { openStore, openStores as openStoresUnique, type MemoryStoreAdapter } from '../memory';
import * as memoryOps from '../memory/ops';
import { AgentKeepError, asAgentKeepError } from './errors';
import { abortedError, isAbortedError, isErrno, mapLimit, tempNameFor, throwIfAborted } from './fsutil';
import { Journal, isValidId, newRestorePointId } from './journal';
import { pidAlive } from './lock';
import { collectGarbage, collectIfPending, lockWithRoom, registerInflight, type InflightMarker } from './gc';
import { ObjectStore, hashFile } from './objects';
import { StateLayout, checkStateDirVsTarget, cliTargetArgs, ensureStateDir, isInside, resolveStateDir } from './state';
import { resolveTarget, type ParsedTarget } from './target';
import type { CoreApi, CoreOptions, RestoreWithUndo } from './service';
import { DEFAULT_MIN_AGE_MS, planPrune, type PruneOptions } from './retention';
import { size as formatSize } from '../cli/format';
import { capLevel, DEFAULT_SIZE_CAP_BYTES, readStateConfig, stateConfigPath } from './stateConfig';
import { PairCache } from './paircache';
import { createSpaceError, noUndoPointUnconfirmed, undoPointSpaceError } from './diskfull';
import { targetUsage, treeBytes, type TargetUsage } from './usage';
import { compareCaptures, DEFAULT_READ_MAX_BYTES, encodeContent, normalizeRelPath, tooLarge } from './compare';

/** The sidecar version (from package.json, inlined by the bundler). */
export const VERSION: string = packageVersion;

/** Default wait for a busy target (ms). */
export const DEFAULT_LOCK_TIMEOUT_MS = 30_000;

type AgentCapture = RestorePoint['agent'][number];

/** Everything an operation on one target needs. */
interface TargetCtx {
  target: ParsedTarget;
  backend: MachineBackend;
  journal: Journal;
}

/** Validate params against the protocol schema. @throws AgentKeepError InvalidParams naming the field. */
function validate<S extends z.ZodTypeAny>(schema: S, p: unknown, method: string): z.infer<S> {
  const r = schema.safeParse(p);
  if (!r.success) {
    const issue = r.error.issues[0];
    const field = issue?.path?.length ? issue.path.join('.') : 'params';
    throw new AgentKeepError('InvalidParams', `Invalid ${field} for ${method}: ${issue?.message ?? 'bad value'}.`, `See the ${method} params in sidecar/protocol/protocol.schema.json.`);
  }
  return r.data;
}

/** Throttled progress for one token: at most ~10 notifications a second, stage changes and the end always. */
class Progress {
  private last = 0;
  private stage = '';
  constructor(
    private readonly token: string | undefined,
    private readonly sink: ((p: ProgressParams) => void) | undefined,
  ) {}
  report(stage: string, message: string, done?: number, total?: number): void {
    if (!this.token || !this.sink) return;
    const now = Date.now();
    const final = stage === 'done' || (total !== undefined && done === total);
    if (stage === this.stage && !final && now - this.last < 100) return;
    this.stage = stage;
    this.last = now;
    try {
      this.sink({ token: this.token, stage, message, done, total });
    } catch {
      /* a failing listener must not break the operation */
    }
  }
}

const STAGE_TEXT: Record<string, string> = { scan: 'Scanning files', store: 'Storing new contents', restore: 'Restoring files' };

/** The core services. One instance per process is enough; instances share nothing but the state dir. */
export class Core implements CoreApi {
  /** Absolute state dir in use. */
  readonly stateDir: string;
  readonly layout: StateLayout;
  readonly objects: ObjectStore;
  private readonly lockTimeoutMs: number;
  /** Target key -> id of the last snapshot this instance made (the next create's stat cache). */
  private readonly lastSnapshot = new Map<string, string>();
  /** `<targetKey>/<postId>` -> whether that post and its pre do not differ (immutable once both exist). */
  private readonly pairSame = new Map<string, boolean>();

  /** @throws AgentKeepError BadStateDir for a relative state dir. */
  constructor(private readonly opts: CoreOptions = {}) {
    this.stateDir = resolveStateDir(opts.stateDir);
    this.layout = new StateLayout(this.stateDir);
    this.objects = new ObjectStore(this.layout.objectsDir);
    this.lockTimeoutMs = opts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  }

  // ------------------------------------------------------------------------------------------
  // plumbing

  /**
   * Parse the target (keyed by the realpath of its directory), refuse a state dir inside it, create
   * the state dir, bind backend and journal. `sweep` removes temp objects of dead writers first
   * (create, restore and delete do).
   */
  private async open(targetSpec: string, mustExist = true, sweep = false): Promise<TargetCtx> {
    const target = await resolveTarget(targetSpec);
    if (target.path) await checkStateDirVsTarget(this.stateDir, target.path);
    const backend = backendFor({ target, layout: this.layout, objects: this.objects });
    if (mustExist) await backend.check();
    await ensureStateDir(this.layout);
    await this.objects.init();
    if (sweep) await this.objects.sweepTemps();
    return { target, backend, journal: new Journal(this.layout.journalDir(target.key), target.spec, cliTargetArgs(target.spec, this.stateDir)) };
  }

  private changed(target: string, what: 'restorePoints' | 'memory'): void {
    try {
      this.opts.onChanged?.({ target, what });
    } catch {
      /* listeners must not break the operation */
    }
  }

  /**
   * Run `fn` holding the target's lock. `writesObjects` also registers an in-flight marker and waits
   * for a running garbage collection, so GC never removes an object this operation is about to use
   * (sidecar/core/gc.ts). Before that, objects left by a failed or killed earlier operation are
   * collected; when `fn` fails, what it stored and no restore point references is collected at once.
   */
  private async withTarget<T>(t: TargetCtx, op: string, writesObjects: boolean, fn: () => Promise<T>, timeoutMs = this.lockTimeoutMs): Promise<T> {
    const lock = await lockWithRoom(this.layout, this.layout.targetLock(t.target.key), { op, what: `Target ${t.target.spec}`, timeoutMs, signal: this.opts.signal });
    let marker: InflightMarker | undefined;
    let ok = false;
    try {
      if (writesObjects) {
        await collectIfPending(this.layout, this.objects, this.lockTimeoutMs);
        marker = await registerInflight(this.layout, { op, target: t.target.spec }, this.lockTimeoutMs);
      }
      const r = await fn();
      ok = true;
      return r;
    } finally {
      await marker?.done(ok);
      await lock.release();
      if (marker && !ok) await this.collectGarbage().catch(() => undefined);
    }
  }

  /**
   * Mark & sweep (sidecar/core/gc.ts collectGarbage): delete objects no restore point of any target
   * references. Skipped (0 freed) while a create or restore is in flight; the next create, delete or
   * prune collects what was left.
   */
  async collectGarbage(): Promise<{ freedBytes: number; removed: number }> {
    const r = await collectGarbage(this.layout, this.objects, this.lockTimeoutMs);
    return { freedBytes: r.freedBytes, removed: r.removed };
  }

  /**
   * Stores whose root lies inside the target, as a filter of target-relative paths a machine restore
   * must leave alone: always their volatile paths (lock files, MemoryStoreAdapter.isVolatilePath, for
   * every scope), plus their agent state when `agentState` (scope machine).
   */
  private agentStateFilter(t: ParsedTarget, stores: MemoryStoreAdapter[], agentState = true): PathFilter | undefined {
    const inside = stores
      .filter((s) => isInside(s.root, t.path))
      .map((s) => ({ s, prefix: path.relative(t.path, s.root).split(path.sep).join('/') }));
    if (!inside.length) return undefined;
    const keep = (s: MemoryStoreAdapter, rel: string): boolean => !!s.isVolatilePath?.(rel) || (agentState && s.isAgentStatePath(rel));
    return (rel: string) =>
      inside.some(({ s, prefix }) => {
        if (!prefix) return keep(s, rel);
        return rel.startsWith(prefix + '/') && keep(s, rel.slice(prefix.length + 1));
      });
  }

  /**
   * Take each store's own write lock (MemoryStoreAdapter.lockAgentState, e.g. Hermes' flock on
   * memories/MEMORY.md.lock) before a restore writes agent state; all or none.
   * @returns release of all taken locks  @throws TargetBusy from the store (nothing written)
   */
  private async lockStores(stores: MemoryStoreAdapter[]): Promise<() => Promise<void>> {
    const held: Array<{ release(): Promise<void> }> = [];
    const release = async (): Promise<void> => {
      for (const l of held.reverse()) await l.release().catch(() => undefined);
    };
    try {
      for (const s of stores) if (s.lockAgentState && (await s.check().then(() => true, () => false))) held.push(await s.lockAgentState());
    } catch (e) {
      await release();
      throw e;
    }
    return release;
  }

  /** Capture the agent-state files of each store into the object store. */
  private async captureStores(stores: MemoryStoreAdapter[], progress: Progress, abortWhat: string): Promise<AgentCapture[]> {
    const out: AgentCapture[] = [];
    for (const s of stores) {
      await s.check();
      const files = await s.agentStateFiles();
      progress.report('capture', `Capturing agent state of ${s.spec}`, 0, files.length);
      const captured = await mapLimit(files, 8, async (rel) => {
        throwIfAborted(this.opts.signal, abortWhat);
        try {
          if (s.captureFile) return await this.captureVia(s, rel);
          const r = await this.objects.putFile(path.join(s.root, ...rel.split('/')));
          return { path: rel, size: r.size, hash: r.hash };
        } catch (e) {
          if (e instanceof AgentKeepError) throw e;
          if (isErrno(e, 'ENOENT')) return undefined; // vanished meanwhile
          throw new AgentKeepError('FileError', `Cannot read agent-state file ${path.join(s.root, rel)}: ${(e as Error).message}.`, 'Fix its permissions so the sidecar can read it.');
        }
      });
      out.push({ store: s.spec, files: captured.filter((f): f is NonNullable<typeof f> => !!f) });
    }
    return out;
  }

  /**
   * Capture one agent-state file through the adapter's captureFile (a consistent copy, e.g. a SQLite
   * database in WAL mode) into a temp file, then into the object store. Undefined when the adapter
   * does not capture `rel` on its own (captureFile resolved false).
   */
  private async captureVia(s: MemoryStoreAdapter, rel: string): Promise<{ path: string; size: number; hash: string } | undefined> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-capture-'));
    try {
      const tmp = path.join(dir, 'copy');
      if ((await s.captureFile!(rel, tmp)) === false) return undefined;
      const r = await this.objects.putFile(tmp);
      return { path: rel, size: r.size, hash: r.hash };
    } finally {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  private openStores(specs: readonly string[] | undefined): MemoryStoreAdapter[] {
    return openStoresUnique(specs ?? []); // same kind + real path named twice: once
  }

  /**
   * Hermes homes found in a target, for a create that names no stores: the target itself when it is
   * a Hermes home (memories/, or config.yaml and SOUL.md), `<target>/.hermes`, and every
   * `<target>/.hermes/profiles/<name>` that is one (HermesStore.check passes).
   */
  async detectStores(targetPath: string): Promise<MemoryStoreAdapter[]> {
    const out: MemoryStoreAdapter[] = [];
    // Only targets that are a local directory tree (dir, btrfs) can hold stores we read directly.
    if (!targetPath || !(await fs.stat(targetPath).then((st) => st.isDirectory(), () => false))) return out;
    const isDir = (p: string): Promise<boolean> => fs.stat(p).then((st) => st.isDirectory(), () => false);
    const exists = (p: string): Promise<boolean> => fs.lstat(p).then(() => true, () => false);
    const ok = async (home: string): Promise<MemoryStoreAdapter | undefined> => {
      const s = openStore(`hermes:${home}`);
      return (await s.check().then(() => true, () => false)) ? s : undefined;
    };
    const rootLooksHermes =
      (await isDir(path.join(targetPath, 'memories'))) || ((await exists(path.join(targetPath, 'config.yaml'))) && (await exists(path.join(targetPath, 'SOUL.md'))));
    const candidates = rootLooksHermes ? [targetPath] : [];
    const dot = path.join(targetPath, '.hermes');
    if (await isDir(dot)) {
      candidates.push(dot);
      const profiles = path.join(dot, 'profiles');
      const names = await fs.readdir(profiles).catch(() => [] as string[]);
      for (const n of names.sort()) candidates.push(path.join(profiles, n));
    }
    for (const c of candidates) {
      const s = await ok(c);
      if (s) out.push(s);
    }
    return out;
  }

  /** Create a restore point; the caller holds the target lock. */
  private async createLocked(
    t: TargetCtx,
    p: { label?: string; kind?: RestorePoint['kind']; reason?: RestorePoint['reason']; stores: MemoryStoreAdapter[]; pairOf?: string; restoredFrom?: string; important?: boolean; vmstate?: boolean },
    progress: Progress,
    abortWhat = 'the restore point was not created; nothing in the target was changed',
  ): Promise<RestorePoint> {
    const signal = this.opts.signal;
    throwIfAborted(signal, abortWhat);
    const started = Date.now();
    let id = newRestorePointId();
    while (await t.journal.has(id)) id = newRestorePointId();
    // Parent (stat cache): the last snapshot this process made of the target, else the newest in the journal.
    const last = this.lastSnapshot.get(t.target.key);
    const parentId =
      last && (await t.journal.has(last))
        ? last
        : (await t.journal.list()).find((r) => r.machine.backend === t.backend.name && r.status !== 'failed')?.id;
    progress.report('scan', STAGE_TEXT.scan, 0);
    const kind = p.kind ?? 'manual';
    const startedAt = new Date(started).toISOString();
    const label = p.label ?? (kind === 'pre-restore' ? `Before restoring ${p.restoredFrom}` : `Restore point ${startedAt.slice(0, 19).replace('T', ' ')} UTC`);
    let info: Awaited<ReturnType<MachineBackend['create']>>;
    try {
      info = await t.backend.create(id, {
        parentId,
        signal,
        vmstate: p.vmstate,
        meta: { label, kind, createdAt: startedAt, ...(p.reason ? { reason: p.reason } : {}), ...(p.important ? { important: true } : {}), ...(p.pairOf ? { pairOf: p.pairOf } : {}) },
        progress: (stage, done, total) => progress.report(stage, STAGE_TEXT[stage] ?? stage, done, total),
      });
    } catch (e) {
      if (!isAbortedError(e)) throw e;
      // Interrupted (CLI signal): drop temp objects of this instance (a server never aborts, so
      // concurrent creates of other targets on this instance are not affected).
      await this.objects.removeOwnTemps();
      throw abortedError(abortWhat);
    }
    let agent: AgentCapture[];
    try {
      agent = await this.captureStores(p.stores, progress, abortWhat);
      throwIfAborted(signal, abortWhat);
    } catch (e) {
      await t.backend.delete(id).catch(() => undefined);
      if (isAbortedError(e)) await this.objects.removeOwnTemps();
      throw e;
    }
    const createdAt = new Date().toISOString();
    const rp: RestorePoint = {
      id,
      target: t.target.spec,
      label,
      createdAt,
      status: 'ready',
      kind,
      ...(p.reason ? { reason: p.reason } : {}),
      machine: {
        backend: t.backend.name,
        files: info.files,
        bytes: info.bytes,
        newBytes: info.newBytes + 0,
        durationMs: Date.now() - started,
        ...(info.skipped ? { skipped: info.skipped } : {}),
        ...(info.snapname ? { snapname: info.snapname } : {}),
        ...(info.vmstate ? { vmstate: true } : {}),
        ...(info.parent ? { parent: info.parent } : {}),
        ...(info.warnings?.length ? { warnings: info.warnings } : {}),
      },
      agent,
      ...(p.pairOf ? { pairOf: p.pairOf } : {}),
      ...(p.important ? { important: true } : {}),
      ...(p.restoredFrom ? { restoredFrom: p.restoredFrom } : {}),
    };
    try {
      await t.journal.put(rp);
    } catch (e) {
      await t.backend.delete(id).catch(() => undefined);
      throw e;
    }
    this.lastSnapshot.set(t.target.key, id);
    progress.report('done', `Restore point ${id} created`, info.files, info.files);
    return rp;
  }

  /** Restore the captured agent-state files of `stores`; returns changed paths as `<store>:<rel>`. */
  private async restoreAgent(rp: RestorePoint, stores: MemoryStoreAdapter[]): Promise<string[]> {
    const changed: string[] = [];
    const plans: Array<{ s: MemoryStoreAdapter; cap: AgentCapture; current: string[] }> = [];
    for (const s of stores) {
      const cap = findCapture(rp, s);
      if (!cap) throw noCapture(rp, s);
      const current = (await s.agentStateFiles().catch(() => [] as string[])).filter((rel) => !s.isVolatilePath?.(rel));
      for (const f of cap.files) if (!(await this.objects.has(f.hash))) throw this.objects.missing(f.hash);
      plans.push({ s, cap, current });
    }
    for (const { s, cap, current } of plans) {
      const want = new Map(cap.files.map((f) => [f.path, f]));
      for (const f of cap.files) {
        if (s.isVolatilePath?.(f.path)) continue; // a lock file captured by an older version
        throwIfAborted(this.opts.signal, 'the restore was stopped part-way');
        const abs = path.join(s.root, ...f.path.split('/'));
        const st = await fs.lstat(abs).catch(() => undefined);
        if (st?.isFile() && (await hashFile(abs)) === f.hash) continue;
        await fs.mkdir(path.dirname(abs), { recursive: true });
        if (st?.isDirectory()) await fs.rm(abs, { recursive: true, force: true });
        const tmp = tempNameFor(abs, s.root);
        try {
          await this.objects.copyOut(f.hash, tmp);
          await fs.chmod(tmp, st?.isFile() ? st.mode & 0o7777 : 0o644);
          await fs.rename(tmp, abs);
        } catch (e) {
          await fs.rm(tmp, { force: true }).catch(() => undefined);
          throw e;
        }
        changed.push(`${s.spec}:${f.path}`);
      }
      for (const rel of current) {
        if (want.has(rel)) continue;
        throwIfAborted(this.opts.signal, 'the restore was stopped part-way');
        const abs = path.join(s.root, ...rel.split('/'));
        await fs.rm(abs, { force: true });
        changed.push(`${s.spec}:${rel}`);
        // Prune directories emptied by the removal, up to the store root.
        let dir = path.dirname(abs);
        while (dir.length > s.root.length && isInside(dir, s.root)) {
          try {
            await fs.rmdir(dir);
          } catch {
            break;
          }
          dir = path.dirname(dir);
        }
      }
    }
    return changed.sort();
  }

  /** Agent-state differences between a restore point's captures and now (`<store>:<rel>`). */
  private async agentDiff(rp: RestorePoint, stores: MemoryStoreAdapter[]): Promise<string[]> {
    const out: string[] = [];
    for (const s of stores) {
      const cap = findCapture(rp, s);
      if (!cap) continue;
      const current = new Set(await s.agentStateFiles().catch(() => [] as string[]));
      for (const f of cap.files) {
        const abs = path.join(s.root, ...f.path.split('/'));
        const h = current.has(f.path) ? await hashFile(abs).catch(() => undefined) : undefined;
        if (h !== f.hash) out.push(`${s.spec}:${f.path}`);
        current.delete(f.path);
      }
      for (const rel of current) out.push(`${s.spec}:${rel}`);
    }
    return out.sort();
  }

  // ------------------------------------------------------------------------------------------
  // CoreApi

  /**
   * Create a restore point: machine snapshot of the target + capture of each store's agent-state
   * files. Without `stores` (absent, not `[]`) the Hermes homes found in the target are captured
   * (detectStores), so a later restore with scope machine spares their memory. Waits up to
   * lockTimeoutMs for another create/restore of the same target. CoreOptions.signal stops it.
   * Afterwards retention is applied (`retention` params, else `<stateDir>/config.json`, else the
   * defaults; see pruneRestorePoints); a failing prune does not fail the create. Then the size cap
   * is checked where the backend can tell its disk use cheaply (not btrfs): above 90% of
   * `sizeCapBytes` (default 10 GiB) the result carries `warnings` (not stored in the journal).
   * @returns the restore point, plus `warnings` when near or over the size cap
   * A config.json that does not parse is reported in `warnings` (defaults used), not thrown.
   * @throws BadTarget, TargetNotFound, BadStateDir, BadStore, StoreNotFound, TargetBusy, FileError
   */
  async createRestorePoint(params: ParamsOf<'restorePointCreate'>): Promise<ResultOf<'restorePointCreate'>> {
    const p = validate(Methods.restorePointCreate.params, params, 'restorePoint.create');
    const t = await this.open(p.target, true, true);
    // A broken config.json must not stop a restore point before a risky change: warn, use the defaults.
    let configProblem: string | undefined;
    const config = await readStateConfig(this.stateDir).catch((e: unknown) => {
      configProblem = `${asAgentKeepError(e).oneLine()} (retention and the size cap used their defaults for this create)`;
      return {} as Awaited<ReturnType<typeof readStateConfig>>;
    });
    const stores = p.stores ? this.openStores(p.stores) : await this.detectStores(t.target.path);
    const progress = new Progress(p.progressToken, this.opts.onProgress);
    const rp = await this.withTarget(t, 'create restore point', true, () =>
      this.createLocked(t, { label: p.label, kind: p.kind, reason: p.reason, stores, pairOf: p.pairOf, important: p.important, vmstate: p.vmstate }, progress),
    ).catch(async (e: unknown) => {
      throw await createSpaceError(e, this.stateDir, cliTargetArgs(t.target.spec, this.stateDir));
    });
    this.changed(t.target.spec, 'restorePoints');
    // Retention (params, else <stateDir>/config.json, else the defaults); it never deletes the one
    // just made (the newest). A busy target is not waited for long: the next create or a prune catches up.
    const pruned = await this.pruneTarget(t, { ...config.retention, ...definedOnly(p.retention ?? {}) }, false, Math.min(this.lockTimeoutMs, 2000), false).catch(() => undefined);
    const warning = await this.capWarning(t, config.sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES).catch(() => undefined);
    // A target left half-restored by a killed restore: this restore point holds that mixed state.
    const broken = await this.interruptedRestore(t);
    const half = broken
      ? `A restore of ${broken.id} never finished (started ${broken.startedAt}), so this restore point may hold a half-restored target. Finish it: agentkeep restore-point restore ${broken.id} ${cliTargetArgs(t.target.spec, this.stateDir)} --scope ${broken.scope} --yes${broken.undo ? `, or go back to ${broken.undo}` : ''}.`
      : undefined;
    const warnings = [configProblem, warning, half].filter((w): w is string => !!w);
    // Say what retention deleted: a create must never make restore points vanish silently.
    return { ...rp, ...(warnings.length ? { warnings } : {}), ...(pruned?.deleted.length ? { pruned: pruned.deleted } : {}) };
  }

  /**
   * The size-cap warning after a create: the target's disk use (when the backend can tell it
   * without walking its snapshots) above 90% of the cap; undefined below.
   */
  private async capWarning(t: TargetCtx, capBytes: number): Promise<string | undefined> {
    const u = await this.usageOf(t, await t.journal.list(), true);
    if (!u) return undefined;
    const level = capLevel(u.bytes, capBytes);
    if (level === 'ok') return undefined;
    const pct = Math.round((u.bytes / capBytes) * 100);
    return (
      `The restore points of ${t.target.spec} use ${formatSize(u.bytes)}, ${pct}% of the ${formatSize(capBytes)} size cap${level === 'over' ? ' (over the cap)' : ''}. ` +
      `Free space with: agentkeep restore-point prune ${cliTargetArgs(t.target.spec, this.stateDir)} --keep 5 (try --dry-run first), or raise sizeCapBytes in ${stateConfigPath(this.stateDir)}.`
    );
  }

  /** Disk use of restore points `points` of a target (sidecar/core/usage.ts targetUsage). */
  private usageOf(t: TargetCtx, points: RestorePoint[], quick: boolean): Promise<TargetUsage | undefined> {
    return targetUsage(t.backend, t.journal, points, quick);
  }

  /**
   * Estimate of what deleting `gone` frees while `kept` stay: objects (dir manifests, agent captures)
   * only the deleted reference within the target (other targets may share some: an upper bound);
   * btrfs: the exclusive extents of each deleted snapshot (a lower bound); else their newBytes.
   */
  private async freeEstimate(t: TargetCtx, gone: RestorePoint[], kept: RestorePoint[]): Promise<number> {
    const held = async (rs: RestorePoint[]): Promise<Map<string, number>> => {
      const m = new Map<string, number>();
      for (const r of rs) {
        if (t.backend.objectsOf && r.machine.backend === t.backend.name) for (const [h, size] of await t.backend.objectsOf(r.id).catch(() => new Map<string, number>())) m.set(h, size);
        for (const a of r.agent) for (const f of a.files) m.set(f.hash, f.size);
      }
      return m;
    };
    const [g, k] = await Promise.all([held(gone), held(kept)]);
    let bytes = 0;
    for (const [h, size] of g) if (!k.has(h)) bytes += size;
    if (!t.backend.objectsOf) {
      const ext = t.backend.usage ? await t.backend.usage(gone.map((r) => r.id)).catch(() => undefined) : undefined;
      for (const r of gone) bytes += ext?.points.get(r.id)?.newBytes ?? r.machine.newBytes;
    }
    return bytes;
  }

  /**
   * Disk use of a target's restore points and where it stands against the size cap (sizeCapBytes in
   * <stateDir>/config.json, default 10 GiB). See Methods.restorePointUsage.
   * @throws BadTarget, BadStateDir (bad config.json), FileError / Unsupported (btrfs: permission, btrfs-progs missing)
   */
  async usageRestorePoints(params: ParamsOf<'restorePointUsage'>): Promise<ResultOf<'restorePointUsage'>> {
    const p = validate(Methods.restorePointUsage.params, params, 'restorePoint.usage');
    const t = await this.open(p.target, false);
    const capBytes = (await readStateConfig(this.stateDir)).sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES;
    const points = await t.journal.list();
    const u = (await this.usageOf(t, points, false)) ?? { bytes: 0, metaBytes: 0, points: new Map() };
    return {
      target: t.target.spec,
      bytes: u.bytes,
      metaBytes: u.metaBytes,
      stateDirBytes: await treeBytes(this.stateDir),
      capBytes,
      level: capLevel(u.bytes, capBytes),
      points: points.map((r) => ({ id: r.id, ...(u.points.get(r.id) ?? { bytes: r.machine.bytes, newBytes: r.machine.newBytes }) })),
    };
  }

  /** Path of the "restore in progress" marker of a target (in its journal dir; dot files are not restore points). */
  private restoreMarker(t: { target: ParsedTarget }): string {
    return path.join(this.layout.journalDir(t.target.key), '.restoring.json');
  }

  /**
   * A restore of the target that started writing and never finished (its process is gone): the
   * target may be half-restored. Undefined when there is none or its process still runs.
   */
  private async interruptedRestore(t: { target: ParsedTarget }): Promise<{ id: string; undo?: string; scope: Scope; stores?: string[]; startedAt: string } | undefined> {
    const raw = await fs.readFile(this.restoreMarker(t), 'utf8').catch(() => undefined);
    if (!raw) return undefined;
    try {
      const m = JSON.parse(raw) as { id: string; undo?: string; scope?: Scope; stores?: string[]; startedAt: string; pid: number; host: string };
      if (m.host === os.hostname() && pidAlive(m.pid)) return undefined;
      return { id: m.id, ...(m.undo ? { undo: m.undo } : {}), scope: m.scope ?? 'both', ...(m.stores ? { stores: m.stores } : {}), startedAt: m.startedAt };
    } catch {
      return undefined;
    }
  }

  /** Restore points of a target, newest first (an unknown target has none). @throws BadTarget, BadStateDir; Proxmox: AuthFailed (token, fingerprint), TargetNotFound, Hypervisor */
  async listRestorePoints(params: ParamsOf<'restorePointList'>): Promise<RestorePoint[]> {
    const p = validate(Methods.restorePointList.params, params, 'restorePoint.list');
    const t = await this.open(p.target, false);
    const points = await t.journal.list();
    // Backends that can find restore points by themselves (Proxmox: snapshot description markers)
    // add the ones this journal lacks (made from another machine).
    const known = new Set(points.map((r) => r.id));
    // Errors propagate: a wrong fingerprint, a refused token or an unreachable host must not look like
    // "no restore points" (the journal alone would hide the snapshots on the host).
    const extra = t.backend.foreign ? (await t.backend.foreign()).filter((r) => !known.has(r.id)) : [];
    return extra.length ? [...points, ...extra].sort((a, b) => b.createdAt.localeCompare(a.createdAt)) : points;
  }

  /** Put a restore point the backend found (foreign) but the journal lacks into the journal, so it can be restored or deleted. */
  private async adoptForeign(t: TargetCtx, id: string): Promise<void> {
    if (!t.backend.foreign || (await t.journal.has(id))) return;
    const rp = (await t.backend.foreign()).find((r) => r.id === id);
    if (rp) await t.journal.put(rp);
  }

  /**
   * What differs between a restore point and now (what a restore would undo). Agent-state changes
   * are given for `stores`, default: the stores the restore point captured.
   * @throws RestorePointNotFound, CorruptSnapshot, TargetNotFound
   */
  async diffRestorePoint(params: ParamsOf<'restorePointDiff'>): Promise<ChangeSummary> {
    const p = validate(Methods.restorePointDiff.params, params, 'restorePoint.diff');
    const t = await this.open(p.target);
    const rp = await t.journal.get(p.id);
    const latest = (await t.journal.list()).find((r) => r.id !== rp.id);
    if (!t.backend.diff) {
      throw new AgentKeepError('Unsupported', `The ${t.backend.name} backend cannot list file changes of a snapshot (its snapshots are whole-disk or whole-VM).`, 'Compare the agent state with memory diff, or roll back and look.');
    }
    const stores = p.stores ? this.openStores(p.stores) : this.openStores(rp.agent.map((a) => a.store));
    // Lock files and other volatile paths of the stores in the target are never touched by a restore,
    // so they are not listed as what it would change.
    const skip = this.agentStateFilter(t.target, [...stores, ...(await this.detectStores(t.target.path))], false);
    const m = await t.backend.diff(rp.id, { cacheIds: latest ? [latest.id] : [], ...(skip ? { skip } : {}) });
    return { ...m, agentChanged: await this.agentDiff(rp, stores) };
  }

  /**
   * What changed from restore point `from` to restore point `to` of one target: the machine
   * snapshots compared with each other (no scan of the live tree) and the agent-state captures of the
   * stores both hold. Needs no lock: manifests and journal entries are written atomically.
   * @throws RestorePointNotFound, CorruptSnapshot, BadTarget, Internal (backend cannot compare)
   */
  async compareRestorePoints(params: ParamsOf<'restorePointCompare'>): Promise<ChangeSummary> {
    const p = validate(Methods.restorePointCompare.params, params, 'restorePoint.compare');
    const t = await this.open(p.target, false);
    const [a, b] = await Promise.all([t.journal.get(p.from), t.journal.get(p.to)]);
    for (const rp of [a, b]) {
      if (rp.machine.backend !== t.backend.name) {
        throw new AgentKeepError('CorruptSnapshot', `Restore point ${rp.id} was made by backend "${rp.machine.backend}", not "${t.backend.name}".`, 'Compare restore points of the same target and backend.');
      }
    }
    if (!t.backend.compare) {
      throw new AgentKeepError('Internal', `The ${t.backend.name} backend cannot compare two snapshots.`, 'Use restorePoint.diff (compare with now) instead.');
    }
    const m = await t.backend.compare(a.id, b.id);
    const same = (x: string, y: string): boolean => {
      try {
        return sameStore(x, openStore(y));
      } catch {
        return x === y;
      }
    };
    return { ...m, agentChanged: compareCaptures(a.agent, b.agent, same) };
  }

  /**
   * One file as it was at a restore point: `<store>:<rel>` from an agent-state capture, else a
   * target-relative path of the machine snapshot. Content is utf8 text, or base64 for binary data.
   * @throws RestorePointNotFound, InvalidParams (path with ".."), FileError (above maxBytes, default
   *   2 MB), CorruptSnapshot (object missing), Internal (backend cannot read snapshots)
   */
  async readRestorePointFile(params: ParamsOf<'restorePointReadFile'>): Promise<ResultOf<'restorePointReadFile'>> {
    const p = validate(Methods.restorePointReadFile.params, params, 'restorePoint.readFile');
    const t = await this.open(p.target, false);
    const rp = await t.journal.get(p.id);
    const max = p.maxBytes ?? DEFAULT_READ_MAX_BYTES;
    const cap = rp.agent.find((a) => p.path.startsWith(`${a.store}:`));
    let file: { type: 'file' | 'symlink' | 'directory' | 'none'; size: number; data?: Buffer };
    if (cap) {
      const rel = normalizeRelPath(p.path.slice(cap.store.length + 1));
      const f = cap.files.find((x) => x.path === rel);
      if (!f) file = { type: 'none', size: 0 };
      else if (f.size > max) throw tooLarge(p.path, f.size, max);
      else file = { type: 'file', size: f.size, data: await this.objects.read(f.hash) };
    } else {
      if (!t.backend.readFile) {
        throw new AgentKeepError('Internal', `The ${t.backend.name} backend cannot read files of a snapshot.`, 'Restore the restore point to see its files.');
      }
      file = await t.backend.readFile(rp.id, normalizeRelPath(p.path), max);
    }
    const enc = file.data ? encodeContent(file.data) : { encoding: 'utf8' as const, content: '' };
    return { path: p.path, type: file.type, size: file.size, ...enc };
  }

  /**
   * Restore a restore point with a scope, after capturing the current state as a `pre-restore`
   * restore point (returned as `undo`). Scopes: `both` = the whole tree, then the agent-state
   * captures of the stores; `agent` = only the stores' agent-state files; `machine` = the tree except
   * the agent-state paths of the stores that live inside it. `stores` defaults to the stores the
   * restore point captured. `noUndoPoint` with `confirmed` skips the pre-restore point (no `undo` in
   * the result): the way out when the state dir is too full to hold it.
   * @throws RestorePointNotFound, CorruptSnapshot (nothing touched), TargetBusy, BadStore, DiskFull
   *   (the undo point does not fit: nothing touched; the hint offers prune or --no-undo-point),
   *   ConfirmationRequired (noUndoPoint without confirmed), Internal (failed halfway; the message
   *   names the pre-restore id to go back to)
   */
  restoreRestorePoint(params: ParamsOf<'restorePointRestore'> & { noUndoPoint?: false }): Promise<RestoreWithUndo>;
  restoreRestorePoint(params: ParamsOf<'restorePointRestore'>): Promise<ResultOf<'restorePointRestore'>>;
  async restoreRestorePoint(params: ParamsOf<'restorePointRestore'>): Promise<ResultOf<'restorePointRestore'>> {
    const p = validate(Methods.restorePointRestore.params, params, 'restorePoint.restore');
    const t = await this.open(p.target, true, true);
    const progress = new Progress(p.progressToken, this.opts.onProgress);
    const result = await this.withTarget(t, `restore ${p.id}`, true, async () => {
      await this.adoptForeign(t, p.id);
      const rp = await t.journal.get(p.id);
      const scope: Scope = p.scope;
      const stores = this.openStores(p.stores ?? rp.agent.map((a) => a.store));
      if (scope === 'agent' && !stores.length) {
        throw new AgentKeepError(
          'BadStore',
          `Restore point ${rp.id} has no agent-state capture, so scope agent has nothing to restore (nothing was changed).`,
          `Restore it with --scope machine or --scope both, or pick a restore point that captured a store (agentkeep restore-point list ${cliTargetArgs(t.target.spec, this.stateDir)}).`,
        );
      }
      if (scope !== 'machine') for (const s of stores) if (!findCapture(rp, s)) throw noCapture(rp, s);
      if (rp.machine.backend !== t.backend.name) {
        throw new AgentKeepError('CorruptSnapshot', `Restore point ${rp.id} was made by backend "${rp.machine.backend}", not "${t.backend.name}".`, 'Restore it with the target it was made for.');
      }
      // Capture what we are about to replace, so the restore can be undone.
      const capturable: MemoryStoreAdapter[] = [];
      for (const s of stores) if (await s.check().then(() => true, () => false)) capturable.push(s);
      if (!capturable.length && !p.stores) capturable.push(...(await this.detectStores(t.target.path)));
      // (noUndoPoint, confirmed: a full state dir, the user chose to restore without a way back)
      const cli = cliTargetArgs(t.target.spec, this.stateDir);
      if (p.noUndoPoint && !p.confirmed) throw noUndoPointUnconfirmed(rp.id, cli, scope);
      const undo = p.noUndoPoint
        ? undefined
        : await this.createLocked(t, { kind: 'pre-restore', restoredFrom: rp.id, stores: capturable }, progress, `the restore of ${rp.id} did not start; nothing in the target was changed`).catch(async (e: unknown) => {
            throw await undoPointSpaceError(e, { id: rp.id, scope, stores: p.stores, stateDir: this.stateDir, targetArgs: cli });
          });
      try {
        this.opts.onRestoreWriting?.(undo);
      } catch {
        /* a failing listener must not break the restore */
      }
      // A marker while the target is being written: if this process dies (kill -9, power loss) the
      // next list/status says the target may be half-restored and names the undo. Removed on success.
      const marker = this.restoreMarker(t);
      await fs.writeFile(marker, JSON.stringify({ id: rp.id, ...(undo ? { undo: undo.id } : {}), scope, ...(p.stores ? { stores: p.stores } : {}), startedAt: new Date().toISOString(), pid: process.pid, host: os.hostname() }), { mode: 0o600 }).catch(() => undefined);
      let changes: ChangeSummary = { added: [], removed: [], changed: [], agentChanged: [] };
      let machineState: string | undefined;
      let warnings: string[] | undefined;
      // Scopes agent/both write agent-state files: take the stores' own locks first (TargetBusy = nothing written).
      const unlock = scope === 'machine' ? async () => undefined : await this.lockStores(stores);
      try {
        if (scope !== 'agent') {
          const skip = this.agentStateFilter(t.target, [...stores, ...(await this.detectStores(t.target.path))], scope === 'machine');
          const m = await t.backend.restore(rp.id, {
            currentId: undo?.id,
            skip,
            start: p.start,
            signal: this.opts.signal,
            progress: (stage, done, total) => progress.report(stage, STAGE_TEXT[stage] ?? stage, done, total),
          });
          changes = { added: m.added, removed: m.removed, changed: m.changed, agentChanged: [] };
          machineState = m.machineState;
          warnings = m.warnings?.length ? m.warnings : undefined;
        }
        if (scope !== 'machine') changes.agentChanged = await this.restoreAgent(rp, stores);
      } catch (e) {
        const undoCmd = `agentkeep restore-point restore ${undo?.id} ${cliTargetArgs(t.target.spec, this.stateDir)} --scope both --yes`;
        const saved = undo ? `The state before the restore was saved as restore point ${undo.id}.` : 'It was restored without an undo point, so the state before it is gone.';
        if (isAbortedError(e)) {
          throw new AgentKeepError(
            'Internal',
            `Interrupted: the restore of ${rp.id} was stopped part-way, so ${t.target.path} is partly restored. ${saved}`,
            undo ? `Undo with: ${undoCmd} (or run the restore of ${rp.id} again to finish it).` : `Run the restore of ${rp.id} again to finish it.`,
          );
        }
        const err = asAgentKeepError(e);
        throw new AgentKeepError(
          (['CorruptSnapshot', 'FileError', 'Hypervisor', 'GuestLocked', 'AuthFailed', 'RestorePointNotFound', 'DiskFull'] as const).find((k) => k === err.kind) ?? 'Internal',
          `Restore of ${rp.id} stopped: ${err.message} ${saved}`,
          undo ? `To go back to it: agentkeep restore-point restore ${undo.id} ${cliTargetArgs(t.target.spec, this.stateDir)} --scope both` : `${err.hint ?? 'Fix the cause'}, then run the restore of ${rp.id} again to finish it.`,
        );
      } finally {
        await unlock();
      }
      await fs.rm(marker, { force: true }).catch(() => undefined);
      const restored: RestorePoint = { ...rp, status: 'rolled-back' };
      await t.journal.put(restored);
      progress.report('done', `Restored ${rp.id} (${scope})`);
      return { restored, ...(undo ? { undo } : {}), changes, ...(machineState ? { machineState } : {}), ...(warnings ? { warnings } : {}) };
    });
    this.changed(t.target.spec, 'restorePoints');
    if (p.scope !== 'machine') this.changed(t.target.spec, 'memory');
    return result;
  }

  /**
   * Delete a restore point, then garbage-collect objects no restore point references any more.
   * @returns freedBytes: bytes of objects removed (0 while another create/restore is running).
   * @throws RestorePointNotFound, TargetBusy
   */
  async deleteRestorePoint(params: ParamsOf<'restorePointDelete'>): Promise<ResultOf<'restorePointDelete'>> {
    const p = validate(Methods.restorePointDelete.params, params, 'restorePoint.delete');
    const t = await this.open(p.target, false, true);
    if (!isValidId(p.id)) await t.journal.get(p.id); // throws the clear error
    const res = await this.withTarget(t, `delete ${p.id}`, false, async () => {
      await this.adoptForeign(t, p.id);
      await t.journal.remove(p.id);
      await t.backend.delete(p.id);
      const gc = await this.collectGarbage();
      return { deleted: p.id, freedBytes: gc.freedBytes };
    });
    this.changed(t.target.spec, 'restorePoints');
    return res;
  }

  /**
   * Apply retention (sidecar/core/retention.ts planPrune) to one opened target, holding its lock:
   * delete the planned restore points (journal entry first, then the backend snapshot), then
   * garbage-collect once. A dry run only plans.
   */
  private async pruneTarget(
    t: TargetCtx,
    opts: Pick<PruneOptions, 'keep' | 'keepImportant' | 'minAgeMs'>,
    dryRun: boolean,
    lockTimeoutMs = this.lockTimeoutMs,
    estimate = true,
  ): Promise<ResultOf<'restorePointPrune'>> {
    const res = await this.withTarget(t, dryRun ? 'prune (dry run)' : 'prune', false, async () => {
      const points = await t.journal.list();
      const minAgeMs = opts.minAgeMs ?? DEFAULT_MIN_AGE_MS;
      const plan = planPrune(points, { keep: opts.keep, keepImportant: opts.keepImportant, minAgeMs }, await this.identicalPairs(t, points, minAgeMs));
      if (!plan.delete.length) return { deleted: plan.delete, kept: plan.keep, freedBytes: 0, estimatedFreeBytes: 0 };
      const gone = new Set(plan.delete.map((d) => d.id));
      // (not after a create: for btrfs the estimate walks the deleted snapshots, which would make create O(n))
      const estimatedFreeBytes = estimate ? await this.freeEstimate(t, points.filter((r) => gone.has(r.id)), points.filter((r) => !gone.has(r.id))).catch(() => undefined) : undefined;
      const est = estimatedFreeBytes === undefined ? {} : { estimatedFreeBytes };
      if (dryRun) return { deleted: plan.delete, kept: plan.keep, freedBytes: 0, ...est };
      for (const d of plan.delete) {
        await t.journal.remove(d.id);
        await t.backend.delete(d.id);
      }
      const gc = await this.collectGarbage();
      return { deleted: plan.delete, kept: plan.keep, freedBytes: gc.freedBytes, ...est };
    }, lockTimeoutMs);
    if (res.deleted.length && !dryRun) this.changed(t.target.spec, 'restorePoints');
    return res;
  }

  /**
   * Ids of the post restore points (both sides older than an hour, neither the newest) whose pre does
   * not differ from them, by the backend's compare of the two snapshots and the agent-state captures.
   * Results are cached per instance and in the journal dir (sidecar/core/paircache.ts: the snapshots
   * never change, so a new CLI process does not compare every old pair again); a failing compare
   * counts as "differs" and is not cached on disk.
   */
  private async identicalPairs(t: TargetCtx, points: RestorePoint[], minAgeMs = DEFAULT_MIN_AGE_MS): Promise<Set<string>> {
    const out = new Set<string>();
    const compare = t.backend.compare?.bind(t.backend);
    if (!compare) return out;
    const byId = new Map(points.map((r) => [r.id, r]));
    const old = (r: RestorePoint): boolean => Date.now() - Date.parse(r.createdAt) >= minAgeMs && r.id !== points[0]?.id;
    const disk = new PairCache(t.journal.dir);
    for (const post of points) {
      const pre = post.pairOf ? byId.get(post.pairOf) : undefined;
      if (!pre || !old(post) || !old(pre)) continue;
      if (pre.machine.backend !== t.backend.name || post.machine.backend !== t.backend.name) continue;
      const key = `${t.target.key}/${post.id}`;
      let same = this.pairSame.get(key) ?? (await disk.get(post.id));
      if (same === undefined) {
        try {
          const m = await compare(pre.id, post.id);
          const agent = compareCaptures(pre.agent, post.agent, (x, y) => x === y);
          const sameStores = pre.agent.length === post.agent.length && pre.agent.every((a) => post.agent.some((b) => b.store === a.store));
          same = sameStores && !m.added.length && !m.removed.length && !m.changed.length && !agent.length;
          await disk.set(post.id, same);
        } catch {
          same = false;
        }
      }
      this.pairSame.set(key, same);
      if (same) out.add(post.id);
    }
    await disk.save(new Set(points.map((r) => r.id)));
    return out;
  }

  /**
   * Apply retention to a target: keep the newest `keep` (default 20) and newest `keepImportant`
   * (default 10) important restore points, never delete one younger than an hour, the newest one, or
   * half of a pre/post pair; delete the rest (not with dryRun) and garbage-collect (also when
   * nothing is deleted: objects left by failed or killed operations are freed).
   * @returns deleted / kept, each `{id, reason}` newest first; freedBytes (0 for a dry run).
   * @throws InvalidParams, BadTarget, BadStateDir, TargetBusy
   */
  async pruneRestorePoints(params: ParamsOf<'restorePointPrune'>): Promise<ResultOf<'restorePointPrune'>> {
    const p = validate(Methods.restorePointPrune.params, params, 'restorePoint.prune');
    const t = await this.open(p.target, false, !p.dryRun);
    const config = await readStateConfig(this.stateDir);
    const res = await this.pruneTarget(t, { ...config.retention, ...definedOnly({ keep: p.keep, keepImportant: p.keepImportant, minAgeMs: p.minAgeMs }) }, p.dryRun ?? false);
    // Nothing to delete: still collect what failed or killed operations (or an older version) left.
    if (!p.dryRun && !res.deleted.length) res.freedBytes += (await this.collectGarbage()).freedBytes;
    return res;
  }

  /** Mark the change after a restore point as kept (status `kept`). @throws RestorePointNotFound, TargetBusy */
  async keepRestorePoint(params: ParamsOf<'restorePointKeep'>): Promise<RestorePoint> {
    const p = validate(Methods.restorePointKeep.params, params, 'restorePoint.keep');
    const t = await this.open(p.target, false);
    const rp = await this.withTarget(t, `keep ${p.id}`, false, async () => {
      const cur = await t.journal.get(p.id);
      const kept: RestorePoint = { ...cur, status: 'kept' };
      await t.journal.put(kept);
      return kept;
    });
    this.changed(t.target.spec, 'restorePoints');
    return rp;
  }

  /**
   * Rename a restore point and/or set its important flag (journal; the backend's own label too where
   * it keeps one: Proxmox snapshot description). Holds the target lock.
   * @throws RestorePointNotFound, InvalidParams (neither label nor important given), Hypervisor, TargetBusy
   */
  async labelRestorePoint(params: ParamsOf<'restorePointLabel'>): Promise<RestorePoint> {
    const p = validate(Methods.restorePointLabel.params, params, 'restorePoint.label');
    if (p.label === undefined && p.important === undefined) {
      throw new AgentKeepError('InvalidParams', 'Nothing to change: give a new label, or important true/false.', 'Pass --label TEXT and/or --important / --not-important.');
    }
    const t = await this.open(p.target, false);
    const rp = await this.withTarget(t, `label ${p.id}`, false, async () => {
      await this.adoptForeign(t, p.id);
      const cur = await t.journal.get(p.id);
      const labelChanged = p.label !== undefined && p.label !== cur.label;
      const importantChanged = p.important !== undefined && p.important !== Boolean(cur.important);
      if ((labelChanged || importantChanged) && t.backend.relabel && cur.machine.backend === t.backend.name) {
        await t.backend.relabel(p.id, { ...(labelChanged ? { label: p.label } : {}), ...(importantChanged ? { important: p.important } : {}) });
      }
      const next: RestorePoint = { ...cur, ...(p.label !== undefined ? { label: p.label } : {}) };
      if (p.important === true) next.important = true;
      if (p.important === false) delete next.important;
      await t.journal.put(next);
      return next;
    });
    this.changed(t.target.spec, 'restorePoints');
    return rp;
  }

  /** Entries and usage of each store's memory files. @throws BadStore, StoreNotFound, FileError */
  async listMemory(params: ParamsOf<'memoryList'>): Promise<ResultOf<'memoryList'>> {
    const p = validate(Methods.memoryList.params, params, 'memory.list');
    const out: ResultOf<'memoryList'>['stores'] = [];
    for (const s of this.openStores(p.stores)) out.push(...(await s.list()));
    return { stores: out };
  }

  /**
   * Status of an agent: whether its target is reachable, its restore points, its stores, the
   * sidecar version. Never throws for an unreachable target or a broken store (reported instead).
   * @throws BadTarget for a target string that does not parse.
   */
  async agentStatus(params: ParamsOf<'agentStatus'>): Promise<ResultOf<'agentStatus'>> {
    const p = validate(Methods.agentStatus.params, params, 'agent.status');
    const target = await resolveTarget(p.target);
    let reachable = true;
    let message: string | undefined;
    try {
      await backendFor({ target, layout: this.layout, objects: this.objects }).check();
    } catch (e) {
      reachable = false;
      message = asAgentKeepError(e).oneLine();
    }
    const journal = new Journal(this.layout.journalDir(target.key), target.spec, cliTargetArgs(target.spec, this.stateDir));
    const rps = await journal.list().catch(() => [] as RestorePoint[]);
    const stores: ResultOf<'agentStatus'>['stores'] = [];
    for (const spec of p.stores ?? []) {
      try {
        await openStore(spec).check();
        stores.push({ store: spec, ok: true });
      } catch (e) {
        stores.push({ store: spec, ok: false, message: asAgentKeepError(e).oneLine() });
      }
    }
    return {
      target: target.spec,
      backend: target.backend,
      reachable,
      ...(message ? { message } : {}),
      restorePoints: rps.length,
      ...(rps[0] ? { latest: rps[0] } : {}),
      stores,
      ...(await this.interruptedRestore({ target }).then((r) => (r ? { interruptedRestore: r } : {}))),
      version: VERSION,
    };
  }

  // ------------------------------------------------------------------------------------------
  // Memory operations (sidecar/memory/ops) and agent discovery (machine backends)

  /** See Methods.memoryShow; implemented in sidecar/memory/ops. */
  showMemory(p: ParamsOf<'memoryShow'>): Promise<ResultOf<'memoryShow'>> {
    return memoryOps.showMemory(this.memoryCtx(), validate(Methods.memoryShow.params, p, 'memory.show'));
  }
  /** See Methods.memoryEdit; implemented in sidecar/memory/ops. */
  async editMemory(p: ParamsOf<'memoryEdit'>): Promise<ResultOf<'memoryEdit'>> {
    const r = await memoryOps.editMemory(this.memoryCtx(), validate(Methods.memoryEdit.params, p, 'memory.edit'));
    this.changed('', 'memory');
    return r;
  }
  /** See Methods.memoryRemove; implemented in sidecar/memory/ops. */
  async removeMemory(p: ParamsOf<'memoryRemove'>): Promise<ResultOf<'memoryRemove'>> {
    const r = await memoryOps.removeMemory(this.memoryCtx(), validate(Methods.memoryRemove.params, p, 'memory.remove'));
    this.changed('', 'memory');
    return r;
  }
  /** See Methods.memoryAdd; implemented in sidecar/memory/ops. */
  async addMemory(p: ParamsOf<'memoryAdd'>): Promise<ResultOf<'memoryAdd'>> {
    const r = await memoryOps.addMemory(this.memoryCtx(), validate(Methods.memoryAdd.params, p, 'memory.add'));
    this.changed('', 'memory');
    return r;
  }
  /** See Methods.memoryLint; implemented in sidecar/memory/ops. */
  lintMemory(p: ParamsOf<'memoryLint'>): Promise<ResultOf<'memoryLint'>> {
    return memoryOps.lintMemory(this.memoryCtx(), validate(Methods.memoryLint.params, p, 'memory.lint'));
  }
  /**
   * See Methods.memoryDiff: entries added/removed/changed between a restore point's agent-state
   * capture and now (or another restore point).
   * @throws RestorePointNotFound, BadStore, Unsupported
   */
  async diffMemory(p: ParamsOf<'memoryDiff'>): Promise<ResultOf<'memoryDiff'>> {
    return memoryOps.diffMemory(this.memoryCtx(), validate(Methods.memoryDiff.params, p, 'memory.diff'));
  }
  /**
   * Read a file inside a Proxmox VM through the QEMU guest agent (agent/file-read, at most 16 MiB):
   * for agent-state files (memory) that live in the guest. CLI `agentkeep guest read`.
   * @throws BadTarget, Unsupported (not a proxmox qemu target, LXC, agent not running), FileError, AuthFailed, Hypervisor
   */
  async guestFileRead(target: string, file: string): Promise<Buffer> {
    return guestFileRead(await this.guestBackend(target, file), file);
  }

  /**
   * Replace a file inside a Proxmox VM through the QEMU guest agent (agent/file-write, at most 61440
   * bytes of content). CLI `agentkeep guest write`.
   * @throws as guestFileRead; FileError when the content is too large (nothing written)
   */
  async guestFileWrite(target: string, file: string, content: string): Promise<void> {
    await guestFileWrite(await this.guestBackend(target, file), file, content);
  }

  private async guestBackend(target: string, file: string): Promise<ProxmoxBackend> {
    if (!file.startsWith('/')) throw new AgentKeepError('InvalidParams', `Guest file "${file}" is not an absolute path.`, 'Give the path inside the VM, e.g. /root/.hermes/memories/MEMORY.md.');
    const t = await this.open(target, false);
    if (!(t.backend instanceof ProxmoxBackend)) {
      throw new AgentKeepError('Unsupported', `Guest file access needs a proxmox:// VM target, not ${t.target.spec}.`, 'For dir: and btrfs: targets read the file directly; for qemu: targets use the VM itself.');
    }
    return t.backend;
  }

  /**
   * See Methods.agentDiscover: agents the credentials can see (Proxmox: guests with a tag).
   * @throws BadTarget, Unsupported (backends without discovery), AuthFailed, Hypervisor
   */
  async discoverAgents(p: ParamsOf<'agentDiscover'>): Promise<ResultOf<'agentDiscover'>> {
    validate(Methods.agentDiscover.params, p, 'agent.discover');
    if (!/^proxmox:/i.test(p.target.trim())) throw new AgentKeepError('Unsupported', 'Agent discovery needs a proxmox:// target.', 'Give proxmox://HOST[:PORT].');
    return discoverProxmoxAgents(p.target, p.tag ?? 'agent');
  }

  private memoryCtx(): memoryOps.MemoryOpsContext {
    return {
      stateDir: this.stateDir,
      getRestorePoint: async (target, id) => (await this.open(target, false)).journal.get(id),
      readObject: (hash) => this.objects.read(hash),
    };
  }
}

/** `o` without its undefined fields (so a spread does not overwrite a configured value with undefined). */
function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function sameStore(a: string, s: MemoryStoreAdapter): boolean {
  if (a === s.spec) return true;
  try {
    const o = openStore(a);
    return o.kind === s.kind && o.root === s.root;
  } catch {
    return false;
  }
}

function findCapture(rp: RestorePoint, s: MemoryStoreAdapter): AgentCapture | undefined {
  return rp.agent.find((a) => sameStore(a.store, s));
}

function noCapture(rp: RestorePoint, s: MemoryStoreAdapter): AgentKeepError {
  const have = rp.agent.map((a) => a.store).join(', ') || 'none';
  return new AgentKeepError('BadStore', `Restore point ${rp.id} has no agent-state capture of ${s.spec} (captured: ${have}).`, 'Restore with --scope machine, or name a store it captured.');
}
