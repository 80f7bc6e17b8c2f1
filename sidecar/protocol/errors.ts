/**
 * The protocol's error codes, in a module of their own (no zod): sidecar/core/errors.ts and the CLI's
 * start-up fast paths (sidecar/cli/fast.ts) import them without loading the schemas of ./index.ts,
 * which re-exports them.
 */

// ---------------------------------------------------------------------------------------------
// Error codes (JSON-RPC `error.code`; the CLI prints them as `error.code` strings in --json mode)
// ---------------------------------------------------------------------------------------------

/**
 * Error codes. Numeric codes live in the JSON-RPC server-defined range (-32099..-32000 is reserved by
 * JSON-RPC for implementation errors, so we use -33xxx). The string name is what the CLI prints.
 */
export const ErrorCodes = {
  /** Params failed schema validation; message names the field. */
  InvalidParams: { code: -32602, name: 'invalid_params' },
  /** The target string does not parse or names an unknown backend. */
  BadTarget: { code: -33001, name: 'bad_target' },
  /** The target exists in syntax but not on disk / not reachable. */
  TargetNotFound: { code: -33002, name: 'target_not_found' },
  /** No restore point with that id for that target. */
  RestorePointNotFound: { code: -33003, name: 'restore_point_not_found' },
  /** Another create/restore holds the target's lock and did not release it in time. */
  TargetBusy: { code: -33004, name: 'target_busy' },
  /** The store string does not parse or names an unknown store kind. */
  BadStore: { code: -33005, name: 'bad_store' },
  /** The store path is not a store of that kind (e.g. no memories/ in a Hermes home). */
  StoreNotFound: { code: -33006, name: 'store_not_found' },
  /** A destructive action needs confirmation (CLI: pass --yes). */
  ConfirmationRequired: { code: -33007, name: 'confirmation_required' },
  /** The state dir is unusable (inside the target, not writable, ...). */
  BadStateDir: { code: -33008, name: 'bad_state_dir' },
  /** A file could not be read (risk scan, memory). */
  FileError: { code: -33009, name: 'file_error' },
  /** The stored snapshot data is damaged (missing object, bad manifest). */
  CorruptSnapshot: { code: -33010, name: 'corrupt_snapshot' },
  /** The workspace is not trusted; the action needs trust. */
  Untrusted: { code: -33011, name: 'untrusted' },
  /** The backend or store cannot do this (e.g. a file diff of a VM snapshot, an edit of a read-only store). */
  Unsupported: { code: -33012, name: 'unsupported' },
  /** No memory entry with that id in the store(s). */
  EntryNotFound: { code: -33013, name: 'entry_not_found' },
  /** The store changed since it was read (compare-and-swap failed), or an id prefix is ambiguous; nothing was written. */
  Conflict: { code: -33014, name: 'conflict' },
  /** The edit would exceed the store's char limit (Hermes memory_char_limit / user_char_limit); nothing was written. */
  OverBudget: { code: -33015, name: 'over_budget' },
  /** The hypervisor refused or failed (Proxmox API error, failed task, QMP error); the message carries its text and log tail. */
  Hypervisor: { code: -33016, name: 'hypervisor' },
  /** Authentication with the hypervisor failed (bad or expired token/ticket, wrong TLS fingerprint). */
  AuthFailed: { code: -33017, name: 'auth_failed' },
  /** The guest is locked (Proxmox `lock`: backup, snapshot, snapshot-delete, ...) or the VM is busy; AgentKeep never unlocks by itself. */
  GuestLocked: { code: -33018, name: 'guest_locked' },
  /** A file system is full (ENOSPC) or the disk quota is used up (EDQUOT); the message names its mount point and free bytes. Nothing half-written is kept. */
  DiskFull: { code: -33019, name: 'disk_full' },
  /** No named agent of that name in <stateDir>/config.json (agent add NAME makes one); the message names the known ones. */
  AgentNotFound: { code: -33030, name: 'agent_not_found' },
  /** Anything else; the message says what happened. */
  Internal: { code: -33099, name: 'internal' },
} as const;
export type ErrorName = (typeof ErrorCodes)[keyof typeof ErrorCodes]['name'];
