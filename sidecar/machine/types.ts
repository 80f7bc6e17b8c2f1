/**
 * The machine-backend interface: one folder per backend under sidecar/machine/<name>/, registered in
 * sidecar/machine/index.ts. A backend snapshots the machine state of a target (a directory tree, a
 * btrfs subvolume, a VM) and rolls it back. Agent-state capture is done by the core, not here.
 */
import type { ObjectStore } from '../core/objects';
import type { StateLayout } from '../core/state';
import type { ParsedTarget } from '../core/target';
import type { ResultOf, RestorePoint, TargetDescription } from '../protocol';

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
  /** Entries found but not captured (dir: sockets, FIFOs, device files). */
  skipped?: number;
  /** Name of the snapshot on the hypervisor/filesystem when it is not the restore-point id. */
  snapname?: string;
  /** The snapshot holds RAM state (VM backends). */
  vmstate?: boolean;
  /** Parent snapshot on the hypervisor (Proxmox `parent`). */
  parent?: string;
  /** Warnings the hypervisor reported (task log lines of a "WARNINGS: n" task). */
  warnings?: string[];
  /**
   * Resolves (never rejects) once the snapshot is durable, when it is not yet at return (dir: the
   * fsyncs of the manifest's directory and of the pack's, overlapped with the journal entry's own
   * write and fsync).
   * The core renames the journal entry that names the snapshot into place only after it, so a
   * crash never leaves a restore point whose snapshot is lost. Not part of the journal entry.
   */
  durable?: Promise<void>;
}

/** What a backend gets to describe a snapshot (Proxmox writes it into the snapshot description). */
export interface SnapshotMeta {
  label: string;
  kind: RestorePoint['kind'];
  reason?: RestorePoint['reason'];
  important?: boolean;
  pairOf?: string;
  /** ISO 8601 UTC. */
  createdAt: string;
}

/** Result of a machine restore (rollback). */
export interface RestoreOutcome extends MachineChanges {
  /** VM backends: guest state after the rollback (running | stopped | paused). */
  machineState?: string;
  /** What the user must know (the VM was stopped by the rollback, warnings of the task). */
  warnings?: string[];
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

/** One path of a snapshot as restorePoint.readFile sees it. */
export interface SnapshotFile {
  /** none: the snapshot does not hold the path. */
  type: 'file' | 'symlink' | 'directory' | 'none';
  /** Bytes of the content (0 for directory and none). */
  size: number;
  /** The content of a file, the link text of a symlink. */
  data?: Buffer;
}

/** Context every backend gets. `O`: the options its factory's `parse` returned. */
export interface BackendContext<O = unknown> {
  target: ParsedTarget<O>;
  layout: StateLayout;
  objects: ObjectStore;
  /**
   * The process is long-running (the sidecar's `serve`; CoreOptions.changeJournal): a backend may
   * keep state across calls, e.g. the dir backend's inotify change journal (dir/journal.ts).
   */
  changeJournal?: boolean;
  /**
   * The process makes this one call and exits (CoreOptions.oneShot): a backend may skip what only
   * later calls would use, e.g. the dir backend keeps no snapshot entries in memory after a create.
   */
  oneShot?: boolean;
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
   * snapshot of the same target whose metadata may be reused (stat cache). `signal` stops it (no
   * snapshot is recorded; fsutil's abortedError is thrown).
   */
  create(
    snapshotId: string,
    opts: {
      parentId?: string;
      progress?: BackendProgress;
      signal?: AbortSignal;
      meta?: SnapshotMeta;
      vmstate?: boolean;
      /**
       * Called once the snapshot's content is known in this process, before it is made durable
       * (dir: before its pack's fsync), so a restore can compare against it meanwhile
       * (prepareRestore with this snapshot as `currentId`). Optional; a listener must not throw.
       */
      built?: () => void;
    },
  ): Promise<SnapshotInfo>;
  /** Ids of the snapshots this backend holds for the target. */
  list(): Promise<string[]>;
  /**
   * Make the target identical to the snapshot (rollback), except for paths `skip` accepts.
   * `currentId` names a snapshot of the current state taken just before (used as stat cache).
   * `signal` stops the restore between entries (the backend removes its partial writes, e.g. temp
   * files, and throws fsutil's abortedError); what was already restored stays.
   * @throws AgentKeepError CorruptSnapshot when the snapshot is damaged.
   */
  restore(
    snapshotId: string,
    opts: { currentId?: string; skip?: PathFilter; progress?: BackendProgress; signal?: AbortSignal; start?: boolean },
  ): Promise<RestoreOutcome>;
  /**
   * A restore in two steps (optional; restore() is both): everything that only reads (what differs
   * between the snapshot and the current state `currentId`, or a fresh scan without it, and the check
   * that every object it will write exists and, packed, hashes to its name), then `apply()`, which
   * writes. Nothing in the target is touched before apply(), so an error of this step means nothing
   * was changed. `currentId` may be a snapshot this object is still making (after its `built`
   * callback), so the comparison runs while that snapshot's fsyncs do.
   * @throws AgentKeepError CorruptSnapshot when the snapshot is damaged or an object it needs is missing.
   */
  prepareRestore?(
    snapshotId: string,
    opts: { currentId?: string; skip?: PathFilter; signal?: AbortSignal },
  ): Promise<{ apply(opts: { progress?: BackendProgress; signal?: AbortSignal }): Promise<RestoreOutcome> }>;
  /**
   * The restore of this object finished (the core calls it after the restore point's status change,
   * just before the restore returns): the moment from which the target is the user's again. Optional:
   * the dir backend takes its restore record's stamp here (dir/index.ts, RestoreRecord).
   */
  restoreSettled?(): void;
  /**
   * What differs between the snapshot and now (except paths `skip` accepts). Optional: backends
   * whose snapshots are opaque (a VM disk) leave it out, and restorePoint.diff answers Unsupported.
   */
  diff?(snapshotId: string, opts: { skip?: PathFilter; cacheIds?: string[] }): Promise<MachineChanges>;
  /**
   * What changed from snapshot `fromId` to snapshot `toId` (added = only in `to`). Optional: a backend
   * that cannot tell leaves it out and restorePoint.compare says so.
   */
  compare?(fromId: string, toId: string): Promise<MachineChanges>;
  /**
   * One path of a snapshot (target-relative POSIX path). Optional like compare.
   * @throws AgentKeepError FileError when the file is larger than maxBytes, CorruptSnapshot when damaged.
   */
  readFile?(snapshotId: string, rel: string, maxBytes: number): Promise<SnapshotFile>;
  /**
   * Rename a snapshot where the backend keeps a label of its own (Proxmox: the human part of the
   * snapshot description). Optional: backends without one keep labels in the journal only.
   */
  relabel?(snapshotId: string, change: { label?: string; important?: boolean }): Promise<void>;
  /**
   * Check that a snapshot's own data can be read, without touching the target: `quick` reads only
   * what is small (dir: the manifest's head), else everything a restore reads first (dir: the
   * manifest and its trees). Optional: backends whose snapshots the hypervisor keeps leave it out.
   * The core calls it before a restore takes its undo point, and agent.status (quick) to report
   * damaged restore points.
   * @throws AgentKeepError CorruptSnapshot naming what is missing or damaged.
   */
  verify?(snapshotId: string, opts?: { quick?: boolean }): Promise<void>;
  /** Delete a snapshot (not its shared objects; the core garbage-collects those). */
  delete(snapshotId: string): Promise<void>;
  /**
   * Disk use of snapshots `ids` kept outside the object store (btrfs: `btrfs filesystem du`).
   * Optional: backends whose snapshots live in the object store (dir: the core sums the objects
   * their manifests name, see `objectsOf`) or on a hypervisor leave it out. `quick`: return undefined
   * instead of walking the snapshots (the core's size-cap check after a create asks so).
   * @returns bytes: bytes the snapshots hold, shared extents counted once; points: per snapshot
   *   `bytes` (logical) and `newBytes` (held by it alone).
   */
  usage?(
    ids: string[],
    opts?: { quick?: boolean },
  ): Promise<{ bytes: number; points: Map<string, { bytes: number; newBytes: number }> } | undefined>;
  /**
   * Objects snapshot `id` references in the object store (dir): hash -> size in bytes; for the
   * per-target disk use and the prune estimate. @throws CorruptSnapshot when its data is missing.
   */
  objectsOf?(id: string): Promise<Map<string, number>>;
  /**
   * Distinct objects all snapshots of the target hold in the object store (hash -> size) and the
   * bytes of the backend's own data in the state dir (dir: manifests), cheaply (dir: an index kept
   * by create and delete, not a read of every manifest). For the size-cap check after a create.
   */
  heldObjects?(): Promise<{ objects: Map<string, number>; metaBytes: number }>;
  /**
   * An upper bound, in bytes, of what heldObjects would count (objects + metaBytes) for snapshots
   * `points` (id and the journal's machine.bytes), without reading any snapshot (dir: a summary kept
   * by create). The size-cap check after a create asks for it first and calls heldObjects only when
   * the bound comes near the cap. Optional.
   */
  heldBound?(points: Array<{ id: string; bytes: number }>): Promise<number>;
  /**
   * Restore points the backend can rebuild from the hypervisor alone (Proxmox: the `agentkeep:v1:`
   * marker in snapshot descriptions), so `restore-point list` shows snapshots another machine made.
   * Optional; they carry no agent-state capture.
   */
  foreign?(): Promise<RestorePoint[]>;
  /**
   * Read a file inside the guest through the hypervisor (Proxmox: the QEMU guest agent). Optional:
   * backends that cannot reach into the guest leave it out (the core answers Unsupported).
   * @param file absolute path inside the guest
   * @throws AgentKeepError Unsupported (no guest agent), FileError (too large), AuthFailed, Hypervisor
   */
  readGuestFile?(file: string): Promise<Buffer>;
  /**
   * Replace a file inside the guest (UTF-8 `content`). Optional like readGuestFile.
   * @throws AgentKeepError FileError (content over the backend's limit: nothing written), as readGuestFile
   */
  writeGuestFile?(file: string, content: string): Promise<void>;
}

/**
 * What a factory's `parse` returns for the part of a target string after `<scheme>:`. The core adds
 * the scheme and the journal key (sha256 of `keySpec`, see sidecar/core/target.ts).
 */
export interface TargetParse<O = unknown> {
  /** The normalised target string, scheme included, e.g. `dir:/home/me/.hermes`. */
  spec: string;
  /** What the journal key is hashed from (default `spec`): e.g. Proxmox leaves the node out. */
  keySpec?: string;
  /**
   * Absolute local path the target names (a directory, a subvolume, a QMP socket), when there is
   * one: the core then keys the target by the realpath of it (two spellings share one journal).
   */
  path?: string;
  /** The backend's own typed view of the target (host, vmid, ...). */
  options: O;
}

/** One agent found by a factory's `discover` (the agent.discover result item). */
export type DiscoveredAgent = ResultOf<'agentDiscover'>[number];

/**
 * A backend family: owns its target strings (forms, parsing), describes a target (capabilities,
 * local root), builds the backend for one target and reports the objects all its snapshots use.
 * Registered with one line in sidecar/machine/index.ts.
 */
export interface BackendFactory<O = unknown> {
  /** The target scheme it serves, e.g. "dir" (lower case; matched case-insensitively). */
  readonly scheme: string;
  /** How its targets start, as the unknown-scheme hint lists them: "dir:", "proxmox://". */
  readonly prefix: string;
  /** The forms of its target strings for help texts, e.g. ["dir:/abs/path"]. */
  readonly forms: readonly string[];
  /** An example target, e.g. "dir:/home/me/.hermes". */
  readonly example: string;
  /** The sentence every parse error of this backend carries as its hint ("Write the target as …"). */
  readonly formHint: string;
  /**
   * Parse the part of a target string after `<scheme>:` (no I/O).
   * @param rest e.g. `/home/me/.hermes` for `dir:/home/me/.hermes`
   * @param spec the whole target string as given (trimmed), for messages
   * @throws AgentKeepError BadTarget naming the wrong part, with `formHint` (or a better fix) as hint
   */
  parse(rest: string, spec: string): TargetParse<O>;
  /** Describe a parsed target: capabilities, local root, display name (no I/O). */
  describe(target: ParsedTarget<O>): TargetDescription;
  create(ctx: BackendContext<O>): MachineBackend;
  /** Object hashes referenced by every snapshot of every target of this backend (for GC). */
  referencedObjects?(layout: StateLayout): Promise<Set<string>>;
  /**
   * Delete snapshot data kept in the state dir whose restore point is in no journal (`isLive` says
   * which are: target key, snapshot id), e.g. a dir manifest written by a create killed before its
   * journal entry. Called only by the garbage collection, under its lock, while no create or
   * restore runs anywhere on the state dir.
   */
  dropOrphans?(layout: StateLayout, isLive: (targetKey: string, snapshotId: string) => boolean): Promise<void>;
  /**
   * Agents on a host (agent.discover). `form` is the host form it takes, e.g. "proxmox://HOST[:PORT]";
   * `run` gets the whole target string (a guest target of the host works too) and the tag ("" = all).
   */
  readonly discover?: { form: string; run(spec: string, tag: string): Promise<DiscoveredAgent[]> };
}
