/**
 * The machine-backend interface: one folder per backend under sidecar/machine/<name>/, registered in
 * sidecar/machine/index.ts. A backend snapshots the machine state of a target (a directory tree, a
 * btrfs subvolume, a VM) and rolls it back. Agent-state capture is done by the core, not here.
 */
import type { ObjectStore } from '../core/objects';
import type { StateLayout } from '../core/state';
import type { ParsedTarget } from '../core/target';

/** What a backend can do. */
export interface BackendCapabilities {
  /** Whether a snapshot can include RAM state (a running VM resumes where it was). */
  ramState: boolean;
  /** Rough cost of a snapshot: instant (copy-on-write), fast (seconds, proportional to changes), slow (minutes). */
  speedClass: 'instant' | 'fast' | 'slow';
  /** Whether a snapshot can be taken while the agent keeps running. */
  canRunWhileRunning: boolean;
  /** Whether the backend can compute a file-level diff against now. */
  diff: boolean;
}

/** Progress of a backend operation (`done`/`total` in files); the core throttles and forwards it. */
export type BackendProgress = (stage: 'scan' | 'store' | 'restore', done: number, total?: number) => void;

/**
 * A predicate on target-relative POSIX paths ('a/b.txt'): true = leave this path alone (neither
 * snapshot-compared nor written nor removed). Used by scope `machine` to spare agent-state files.
 */
export type PathFilter = (rel: string) => boolean;

/** Result of a snapshot. */
export interface SnapshotInfo {
  /** Entries in the snapshot (files, dirs, symlinks). */
  files: number;
  /** Logical size in bytes (sum of file sizes). */
  bytes: number;
  /** Bytes newly stored (the rest was deduplicated). */
  newBytes: number;
}

/** Differences between a snapshot and now, as target-relative POSIX paths (sorted). */
export interface MachineChanges {
  /** Exist now, not in the snapshot (a restore removes them). */
  added: string[];
  /** In the snapshot, gone now (a restore brings them back). */
  removed: string[];
  /** Content, mode, type or link target differ. */
  changed: string[];
}

/** Context every backend gets. */
export interface BackendContext {
  target: ParsedTarget;
  layout: StateLayout;
  objects: ObjectStore;
}

/** One machine backend bound to one target. */
export interface MachineBackend {
  /** Backend name, e.g. "dir". */
  readonly name: string;
  readonly capabilities: BackendCapabilities;
  /** Check that the target is reachable. @throws AgentKeepError TargetNotFound */
  check(): Promise<void>;
  /**
   * Take snapshot `snapshotId` of the target (the restore point id). `parentId` is a previous
   * snapshot of the same target whose metadata may be reused (stat cache).
   */
  create(snapshotId: string, opts: { parentId?: string; progress?: BackendProgress }): Promise<SnapshotInfo>;
  /** Ids of the snapshots this backend holds for the target. */
  list(): Promise<string[]>;
  /**
   * Make the target identical to the snapshot (rollback), except for paths `skip` accepts.
   * `currentId` names a snapshot of the current state taken just before (used as stat cache).
   * @throws AgentKeepError CorruptSnapshot when the snapshot is damaged.
   */
  restore(snapshotId: string, opts: { currentId?: string; skip?: PathFilter; progress?: BackendProgress }): Promise<MachineChanges>;
  /** What differs between the snapshot and now (except paths `skip` accepts). */
  diff(snapshotId: string, opts: { skip?: PathFilter; cacheIds?: string[] }): Promise<MachineChanges>;
  /** Delete a snapshot (not its shared objects; the core garbage-collects those). */
  delete(snapshotId: string): Promise<void>;
}

/** A backend family: builds the backend for one target and reports the objects all its snapshots use. */
export interface BackendFactory {
  /** The target scheme it serves, e.g. "dir". */
  readonly scheme: string;
  create(ctx: BackendContext): MachineBackend;
  /** Object hashes referenced by every snapshot of every target of this backend (for GC). */
  referencedObjects?(layout: StateLayout): Promise<Set<string>>;
}
