/**
 * The plumbing every core job shares (sidecar/core/core.ts delegates to the job modules, which all
 * take a CoreContext): the state dir and its layout, the shared object store, opening a target
 * (parse, bind backend and journal), the per-target lock (withTarget), throttled progress and the
 * `changed` notifications, plus the per-instance caches (stat-cache parent, identical pairs).
 */
import { version as packageVersion } from '../../package.json';
import type { ProgressParams, RestorePoint } from '../protocol';
import { backendFor, type MachineBackend } from '../machine';
import { openStores as openStoresUnique, type MemoryStoreAdapter } from '../memory';
import { collectGarbage, collectIfPending, lockWithRoom, registerInflight, type InflightMarker } from './gc';
import { Journal } from './journal';
import { ObjectStore } from './objects';
import { StateLayout, checkStateDirVsTarget, ensureStateDir, resolveStateDir } from './state';
import { resolveTarget, type ParsedTarget } from './target';
import type { CoreOptions } from './service';

/** The sidecar version (from package.json, inlined by the bundler). */
export const VERSION: string = packageVersion;

/** Default wait for a busy target (ms). */
export const DEFAULT_LOCK_TIMEOUT_MS = 30_000;

/** One store's agent-state capture inside a restore point. */
export type AgentCapture = RestorePoint['agent'][number];

/** Everything an operation on one target needs. */
export interface TargetCtx {
  target: ParsedTarget;
  backend: MachineBackend;
  journal: Journal;
}

/** How CoreContext.open binds a target. */
export interface OpenOptions {
  /** Check that the target exists and is reachable (backend.check) first. Default true. */
  mustExist?: boolean;
  /** Remove temp objects of dead writers first (create, restore, delete and prune do). Default false. */
  sweep?: boolean;
}

/** How CoreContext.withTarget holds a target. */
export interface WithTargetOptions {
  /** What the lock names as its holder, e.g. `restore ak_…` (shown to a waiting caller). */
  op: string;
  /**
   * The operation writes objects (create, restore): register an in-flight marker and wait for a
   * running garbage collection, so GC never removes an object this operation is about to use.
   */
  writesObjects?: boolean;
  /** How long to wait for the lock (ms). Default: CoreOptions.lockTimeoutMs. */
  timeoutMs?: number;
}

/** Throttled progress for one token: at most ~10 notifications a second, stage changes and the end always. */
export class Progress {
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

/** Human text of the backends' progress stages. */
export const STAGE_TEXT: Record<string, string> = {
  scan: 'Scanning files',
  store: 'Storing new contents',
  restore: 'Restoring files',
};

/** The shared state of one Core instance; instances share nothing but the state dir. */
export class CoreContext {
  /** Absolute state dir in use. */
  readonly stateDir: string;
  readonly layout: StateLayout;
  readonly objects: ObjectStore;
  readonly lockTimeoutMs: number;
  /** Target key -> id of the last snapshot this instance made (the next create's stat cache; CoreOptions.lastSnapshots shares it). */
  readonly lastSnapshot: Map<string, string>;
  /** `<targetKey>/<postId>` -> whether that post and its pre do not differ (immutable once both exist). */
  readonly pairSame = new Map<string, boolean>();

  /** @throws AgentKeepError BadStateDir for a relative state dir. */
  constructor(readonly opts: CoreOptions = {}) {
    this.stateDir = resolveStateDir(opts.stateDir);
    this.layout = new StateLayout(this.stateDir);
    this.objects = new ObjectStore(this.layout.objectsDir);
    this.lockTimeoutMs = opts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    this.lastSnapshot = opts.lastSnapshots ?? new Map<string, string>();
  }

  /** CoreOptions.signal: stops a create or restore of this instance. */
  get signal(): AbortSignal | undefined {
    return this.opts.signal;
  }

  /**
   * Parse the target (keyed by the realpath of its directory), refuse a state dir inside it, create
   * the state dir, bind backend and journal.
   * @throws BadTarget, BadStateDir; TargetNotFound (and the backend's own errors) with mustExist
   */
  async open(targetSpec: string, { mustExist = true, sweep = false }: OpenOptions = {}): Promise<TargetCtx> {
    const target = await resolveTarget(targetSpec);
    if (target.path) await checkStateDirVsTarget(this.stateDir, target.path);
    const backend = backendFor({
      target,
      layout: this.layout,
      objects: this.objects,
      changeJournal: this.opts.changeJournal === true,
      oneShot: this.opts.oneShot === true && this.opts.changeJournal !== true,
    });
    if (mustExist) await backend.check();
    await ensureStateDir(this.layout);
    await this.objects.init();
    if (sweep) await this.objects.sweepTemps();
    return { target, backend, journal: this.journalOf(target) };
  }

  /** The journal of a parsed target (nothing is created until it is written). */
  journalOf(target: ParsedTarget): Journal {
    return new Journal(this.layout.journalDir(target.key), target.spec);
  }

  /** Tell CoreOptions.onChanged that restore points or memory of a target changed. */
  changed(target: string, what: 'restorePoints' | 'memory'): void {
    try {
      this.opts.onChanged?.({ target, what });
    } catch {
      /* listeners must not break the operation */
    }
  }

  /** Progress reporter for a call's progressToken (silent without one). */
  progress(token: string | undefined): Progress {
    return new Progress(token, this.opts.onProgress);
  }

  /** Adapters of store specs; the same kind + real path named twice is opened once. */
  openStores(specs: readonly string[] | undefined): MemoryStoreAdapter[] {
    return openStoresUnique(specs ?? []);
  }

  /**
   * Run `fn` holding the target's lock (see WithTargetOptions.writesObjects for the GC handshake,
   * sidecar/core/gc.ts). An operation that writes objects first collects what a failed or killed
   * earlier one left (collectIfPending: one readdir when there is nothing); when `fn` fails, what
   * it stored and no restore point references is collected at once (or by the next create, while
   * another operation runs). On a full file system the lock still fits (gc.ts space reserve).
   * @throws TargetBusy when the lock is not free within the timeout; DiskFull when not even the lock fits
   */
  async withTarget<T>(
    t: TargetCtx,
    { op, writesObjects = false, timeoutMs = this.lockTimeoutMs }: WithTargetOptions,
    fn: () => Promise<T>,
  ): Promise<T> {
    const lock = await lockWithRoom(this.layout, this.layout.targetLock(t.target.key), {
      op,
      what: `Target ${t.target.spec}`,
      timeoutMs,
      signal: this.opts.signal,
    });
    let marker: InflightMarker | undefined;
    let ok = false;
    const stored = this.objects.stored;
    try {
      if (writesObjects) {
        await collectIfPending(this);
        marker = await registerInflight(this.layout, { op, target: t.target.spec }, this.lockTimeoutMs);
      }
      const r = await fn();
      ok = true;
      return r;
    } finally {
      // (a failure before anything was stored, e.g. a wrong id, leaves no orphan: no collection)
      const orphans = !ok && this.objects.stored !== stored;
      await marker?.done(!orphans);
      await lock.release();
      if (marker && orphans) await collectGarbage(this).catch(() => undefined);
    }
  }

  /**
   * Put a restore point the backend found (foreign: e.g. a Proxmox snapshot made from another
   * machine) but the journal lacks into the journal, so it can be restored, relabelled or deleted.
   */
  async adoptForeign(t: TargetCtx, id: string): Promise<void> {
    if (!t.backend.foreign || (await t.journal.has(id))) return;
    const rp = (await t.backend.foreign()).find((r) => r.id === id);
    if (rp) await t.journal.put(rp);
  }
}

/** `o` without its undefined fields (so a spread does not overwrite a configured value with undefined). */
export function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
