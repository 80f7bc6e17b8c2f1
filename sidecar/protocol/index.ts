/**
 * The AgentKeep protocol: every JSON-RPC method between the extension (or any client) and the
 * sidecar, as zod schemas. This module is the single source of truth; `npm run build` exports it as
 * JSON Schema to `sidecar/protocol/protocol.schema.json` (committed; a unit test fails when stale).
 *
 * Wire: JSON-RPC 2.0. Over stdio the sidecar is an LSP server (vscode-languageserver) and these are
 * custom requests next to the standard LSP ones; over WebSocket the same messages, one JSON-RPC
 * message per WebSocket text frame. Method names on the wire are `agentkeep/<name>`.
 *
 * Conventions: times are ISO 8601 strings in UTC; sizes are bytes; paths are absolute POSIX paths;
 * a `target` is a URI-like string (`dir:/abs/path`, `btrfs:`, `qemu:`, `proxmox://`; target.describe
 * says what its backend can do); a `store` is `<kind>:<where>` (`hermes:/abs/home`; each registered
 * kind parses its own rest, store.describe says what a store is and can do).
 */
import { z } from 'zod';
import { RISK_CLASSES } from './risk';
import { RiskClassSchema } from './lens';
import { ErrorCodes } from './errors';

export { RISK_CLASSES, RISK_CLASS_DESCRIPTIONS, type RiskClass } from './risk';
export * from './lens';

/** Prefix of every AgentKeep method on the wire. */
export const METHOD_PREFIX = 'agentkeep/';

// Error codes (JSON-RPC `error.code`; the CLI's string codes): ./errors.ts, no zod, so the core's error type
// and the CLI's fast paths load without the schemas below.
export { ErrorCodes, type ErrorName } from './errors';

/** Front-end commands a NextAction can name instead of a method. */
export const NextActionCommand = z
  .enum(['openSettings', 'showLog'])
  .describe('openSettings: open the editor settings at `setting`; showLog: show the sidecar log');

/**
 * What the user can do next about an error or a warning, as data (never as CLI text): a protocol
 * method with its params, or a front-end command. Front ends render it: the CLI as the equivalent
 * `agentkeep …` command line ("<title> with: <command>"), the extension as a button that runs the
 * method through its sidecar client (asking first when `destructive`).
 */
export const NextAction = z.object({
  title: z
    .string()
    .min(1)
    .describe('Short imperative label without a trailing period, e.g. "Undo", "List restore points": the button text'),
  method: z
    .string()
    .startsWith(METHOD_PREFIX)
    .optional()
    .describe('The method that does it, by its wire name, e.g. agentkeep/restorePoint.restore'),
  params: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('The params of `method` (they pass its params schema), e.g. {target, id, scope}'),
  destructive: z
    .boolean()
    .optional()
    .describe('It replaces or deletes state (a restore, a delete, a prune): front ends confirm before running it'),
  command: NextActionCommand.optional(),
  setting: z.string().optional().describe('For command openSettings: the setting id, e.g. agentkeep.stateDir'),
});
export type NextAction = z.infer<typeof NextAction>;

/** A warning with what the user can do about it: the same structure as an error's message, hint and actions. */
export const Notice = z.object({
  message: z.string().describe('What happened, in one or two sentences (no command lines)'),
  hint: z.string().optional().describe('What the user can do about it, in words'),
  actions: z.array(NextAction).optional().describe('What the user can do about it, as runnable actions'),
});
export type Notice = z.infer<typeof Notice>;

/** `error.data` of every AgentKeep JSON-RPC error: the string code, a hint naming the fix, and next actions. */
export const ErrorData = z.object({
  code: z.string().describe('Stable string code, e.g. "target_busy"'),
  hint: z.string().optional().describe('What the user can do about it, in words'),
  actions: z
    .array(NextAction)
    .optional()
    .describe('What the user can do about it, as runnable actions (first = the usual fix)'),
});
export type ErrorData = z.infer<typeof ErrorData>;

// ---------------------------------------------------------------------------------------------
// Shared shapes
// ---------------------------------------------------------------------------------------------

export const Target = z
  .string()
  .min(1, 'the target is empty: give one such as dir:/abs/path')
  .describe(
    'Target URI: dir:/abs/path (embedded default), btrfs:/abs/subvolume, qemu:/abs/qmp.sock, proxmox://HOST[:PORT]/NODE/qemu|lxc/VMID (NODE "-": find it via /cluster/resources)',
  );
export const Store = z
  .string()
  .min(1, 'the store is empty: give one such as hermes:/abs/path/to/.hermes')
  .describe('Memory store: <kind>:<where>, e.g. hermes:/home/me/.hermes (store.describe says what it is)');
export const Scope = z
  .enum(['machine', 'agent', 'both'])
  .describe(
    'What a restore puts back: machine (files/packages, keeping current agent state), agent (only agent-state files), both',
  );
export type Scope = z.infer<typeof Scope>;

export const RestorePointStatus = z
  .enum(['ready', 'kept', 'rolled-back', 'failed'])
  .describe('ready: usable; kept: the change after it was kept; rolled-back: it was restored; failed: creation failed');

export const RestorePointKind = z
  .enum(['manual', 'pre', 'post', 'pre-restore', 'config-edit', 'update', 'hook'])
  .describe(
    'manual; pre/post around a command; pre-restore: automatic capture taken before a restore; config-edit: before editing a risky config file; update: before updating the agent; hook: taken by a script or git hook',
  );

export const Reason = z
  .object({
    command: z.string().optional().describe('The command that was about to run, exactly as in the file'),
    file: z.string().optional().describe('Absolute path of the file that holds the command'),
    line: z.number().int().positive().optional().describe('1-based line of the command'),
    class: z
      .string()
      .optional()
      .describe(`Risk class: ${RISK_CLASSES.join(' | ')}`),
    risk: z
      .string()
      .optional()
      .describe(
        'Why the command is risky, one line, e.g. "destructive: git reset --hard discards uncommitted changes"',
      ),
    text: z.string().optional().describe('Free-form reason'),
    origin: z
      .enum(['hook', 'mcp', 'run', 'apt'])
      .optional()
      .describe(
        "Who took it: hook = an agent hook (Hermes shell hook, Agent Zero extension) around the agent's own tool " +
          "call; mcp = the agent through AgentKeep's MCP tools; run = `agentkeep run` around a command; apt = the " +
          'apt hook around an apt command',
      ),
    agent: z.string().optional().describe('Name of the agent whose tool call it was taken for (hook, mcp, run, apt)'),
    session: z.string().optional().describe("The agent's session id (Hermes session_id, Agent Zero context id)"),
    tool: z
      .string()
      .optional()
      .describe('The agent tool that was about to run: terminal, write_file, patch, code_execution_tool, ...'),
    toolCallId: z
      .string()
      .optional()
      .describe("The agent's id of the tool call (pairs the pre and post restore points)"),
    path: z.string().optional().describe('For a file write: the path the tool writes, as the agent gave it'),
  })
  .describe('Why the restore point was taken');

export const AgentCapture = z.object({
  store: Store,
  files: z
    .array(
      z.object({
        path: z.string().describe('Path relative to the store root'),
        size: z.number().int(),
        hash: z.string(),
      }),
    )
    .describe('Agent-state files captured'),
  broken: z
    .array(
      z.object({
        path: z.string().describe('Path relative to the store root'),
        message: z.string().describe('What was wrong with it (a directory, a FIFO, a dangling symlink, unreadable)'),
      }),
    )
    .optional()
    .describe(
      'Agent-state files that existed but were broken when the restore point was taken, so not captured: a ' +
        'restore of it leaves them alone (never deletes them); absent when none',
    ),
});

export const RestorePoint = z.object({
  id: z.string().describe('Stable id, ^[A-Za-z][A-Za-z0-9_]+$, at most 40 chars (fits a Proxmox snapname)'),
  target: Target,
  label: z.string(),
  createdAt: z.string().describe('ISO 8601, UTC'),
  status: RestorePointStatus,
  kind: RestorePointKind,
  reason: Reason.optional(),
  machine: z
    .object({
      backend: z.string().describe('Backend name: dir'),
      files: z.number().int().describe('Entries in the snapshot (files, dirs, symlinks)'),
      bytes: z.number().int().describe('Logical size of the snapshot in bytes'),
      newBytes: z.number().int().describe('Bytes newly stored by this snapshot (the rest was deduplicated)'),
      durationMs: z.number().describe('How long the snapshot took, in milliseconds'),
      skipped: z
        .number()
        .int()
        .optional()
        .describe('Entries found but not captured (dir backend: sockets, FIFOs, device files); absent when none'),
      snapname: z
        .string()
        .optional()
        .describe(
          'Name of the snapshot on the hypervisor/filesystem when it differs from the id (Proxmox snapname, QEMU tag, btrfs snapshot dir name)',
        ),
      vmstate: z
        .boolean()
        .optional()
        .describe('The snapshot includes RAM state (a rollback resumes the VM where it was); absent = no'),
      parent: z.string().optional().describe('Parent snapshot name on the hypervisor (Proxmox `parent`)'),
      warnings: z
        .array(z.string())
        .optional()
        .describe('Warnings the hypervisor reported while taking it (Proxmox task "WARNINGS: n" lines)'),
    })
    .describe('The machine snapshot'),
  agent: z.array(AgentCapture).describe('Agent-state captures, one per store'),
  pairOf: z.string().optional().describe('For a post restore point: the id of its pre'),
  important: z
    .boolean()
    .optional()
    .describe('Marked important: retention keeps the newest important ones longer (absent = false)'),
  restoredFrom: z.string().optional().describe('For pre-restore: the id that was being restored'),
});
export type RestorePoint = z.infer<typeof RestorePoint>;

/**
 * What a target's backend can do, from the target string alone (no I/O): the front ends branch on
 * these, never on the target's scheme. Source: the backend's `describe` (sidecar/machine/<backend>).
 */
export const TargetCapabilities = z
  .object({
    ramState: z
      .boolean()
      .describe('Snapshots can hold the RAM state (a rollback resumes the VM where it was): always, or on request'),
    ramStateOnRequest: z
      .boolean()
      .describe('RAM state is optional per snapshot, restorePoint.create `vmstate` decides (Proxmox VMs)'),
    diff: z.boolean().describe('restorePoint.diff lists the files that differ between a snapshot and now'),
    compare: z.boolean().describe('restorePoint.compare lists the files that changed between two snapshots'),
    readFile: z.boolean().describe('restorePoint.readFile reads a file as it was in a snapshot'),
    relabel: z.boolean().describe('A label change is written to the snapshot too (Proxmox: the snapshot description)'),
    guestAccess: z
      .boolean()
      .describe('Files inside the guest can be read and written through the hypervisor (CLI `agentkeep guest`)'),
    guestWriteMaxBytes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('With guestAccess: the most bytes one guest write sends (Proxmox agent/file-write: 61440)'),
    discover: z.boolean().describe("agent.discover lists the agents on this target's host (Proxmox: tagged guests)"),
    startAfterRollback: z
      .boolean()
      .describe('restorePoint.restore `start` applies: the guest can start after a rollback without RAM state'),
    rollbackStopsGuest: z
      .boolean()
      .describe('A machine rollback hard-stops a running guest first (Proxmox); false for directories and QEMU loadvm'),
    speedClass: z
      .enum(['instant', 'fast', 'slow'])
      .describe('Cost of a snapshot: instant (copy-on-write), fast (seconds, grows with changes), slow (minutes)'),
    canRunWhileRunning: z
      .boolean()
      .describe('A snapshot can be taken while the agent keeps running (false: QEMU pauses the VM while it saves)'),
  })
  .describe("What the target's backend can do");
export type TargetCapabilities = z.infer<typeof TargetCapabilities>;

/** A hypervisor guest as a target names it (Proxmox: host, port, node, type, vmid). */
export const TargetGuest = z
  .object({
    host: z.string().describe('Hypervisor API host name or IP (IPv6 without brackets)'),
    port: z.number().int().describe('API port (Proxmox default 8006)'),
    node: z.string().describe('Node name, or "-" when the target leaves it to be looked up'),
    type: z.enum(['qemu', 'lxc']).describe('Guest type: qemu (VM) or lxc (container)'),
    vmid: z.number().int().describe('Guest id (Proxmox VMID)'),
  })
  .describe('The hypervisor guest a target names');
export type TargetGuest = z.infer<typeof TargetGuest>;

/**
 * A target as its backend describes it (target.describe, agent.status `description`): computed from
 * the target string alone, so it is there for an unreachable target too.
 */
export const TargetDescription = z
  .object({
    target: Target.describe('The target, normalised (the spelling the journal is kept under)'),
    backend: z.string().describe('Backend name (the target scheme), e.g. dir, btrfs, qemu, proxmox'),
    name: z.string().describe('Short name for views: the folder name of a directory target, "VM 101" for a guest'),
    kind: z
      .enum(['directory', 'vm', 'container'])
      .describe('What a machine restore puts back: a directory tree, a VM or a container'),
    localRoot: z
      .string()
      .optional()
      .describe(
        "Absolute local directory that holds the target's files (dir, btrfs); machine paths of restore points " +
          'are relative to it. Absent for VMs and remote guests',
      ),
    snapshotNoun: z
      .string()
      .describe('What a snapshot of this backend is called in messages: "snapshot", "btrfs snapshot"'),
    capabilities: TargetCapabilities,
    guest: TargetGuest.optional().describe('Hypervisor guests only: where the guest is'),
  })
  .describe('A target as its backend describes it');
export type TargetDescription = z.infer<typeof TargetDescription>;

export const ChangeSummary = z
  .object({
    added: z.array(z.string()).describe('Paths that exist now but not in the restore point (a restore removes them)'),
    removed: z.array(z.string()).describe('Paths in the restore point that are gone now (a restore brings them back)'),
    changed: z.array(z.string()).describe('Paths whose content, mode, type or link target differ'),
    agentChanged: z.array(z.string()).describe('Agent-state files (store-relative, prefixed by store) that differ'),
    agentLeftAlone: z
      .array(z.string())
      .optional()
      .describe(
        'Agent-state files (`<store>:<rel>`) broken when the restore point was taken (AgentCapture.broken), so not ' +
          'in it: a restore leaves them as they are; absent when none',
      ),
  })
  .describe('Differences between a restore point and the current state (relative paths)');
export type ChangeSummary = z.infer<typeof ChangeSummary>;

export const MemoryEntry = z.object({
  id: z
    .string()
    .describe(
      "Stable id; for Hermes derived from the entry text (sha256, first 12 hex chars); Agent Zero / mem0: the store's own id",
    ),
  text: z.string(),
  store: Store.optional().describe('The store that holds it (set when several stores are listed together)'),
  file: z.string().optional().describe('Absolute path of the file that holds it, where there is one'),
  area: z
    .string()
    .optional()
    .describe(
      'Agent Zero area (main | fragments | solutions | instruments); Hermes: memory | user | soul | skill | archive | ' +
        'pending (a write staged for approval, not in memory yet)',
    ),
  createdAt: z.string().optional().describe('ISO 8601 UTC, where the store keeps time'),
  updatedAt: z.string().optional().describe('ISO 8601 UTC, where the store keeps time'),
  source: z
    .string()
    .optional()
    .describe(
      "Where it came from, in the store's words (Agent Zero knowledge_source, mem0 actor, Hermes session source)",
    ),
  meta: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Other store metadata (consolidation, hashes, user_id, ...)'),
});
export type MemoryEntry = z.infer<typeof MemoryEntry>;
export const StoreProblem = z
  .object({
    code: z.string().describe('Stable string code of the error a read or write of it gives, e.g. "file_error"'),
    message: z.string().describe('What is broken, naming the file (e.g. "… MEMORY.md is not valid UTF-8: …")'),
    hint: z.string().optional().describe('How to fix it'),
  })
  .describe('A damaged or unreadable part of a store');
export type StoreProblem = z.infer<typeof StoreProblem>;

/**
 * One broken part of a store as agent.status reports it: a memory file (MemoryFile.broken) or the
 * history database that provenance reads (Provenance.unavailable), with what is broken and the fix.
 */
export const BrokenStorePart = StoreProblem.extend({
  part: z
    .enum(['entries', 'history'])
    .describe(
      'entries: a memory file, whose entries are unknown or incomplete (MemoryFile.broken); history: the ' +
        'database provenance reads (Hermes state.db, mem0 history.db): the entries can be read, where they came ' +
        'from cannot (Provenance.unavailable)',
    ),
  file: z
    .string()
    .optional()
    .describe('Absolute path of the broken file or database (MemoryFile.file); absent when the error names none'),
  kind: z.string().optional().describe('MemoryFile.kind of a broken memory file, e.g. hermes-memory'),
  entries: z
    .number()
    .int()
    .optional()
    .describe('part entries: how many entries could still be read from it (0: none, its entries are unknown)'),
}).describe('A broken part of a store: which file, what is broken, the fix');
export type BrokenStorePart = z.infer<typeof BrokenStorePart>;

/**
 * A broken store as agent.status reports it (sidecar/memory/broken.ts storeProblems): from one
 * memory.list read of the store and one read of its history, no lint.
 */
export const BrokenStore = z
  .object({
    readable: z
      .enum(['partial', 'none'])
      .describe(
        'partial: some of its memory can still be read and is shown (the broken files marked, writes to them ' +
          'refused); none: nothing can be read (memory.list fails with the first problem)',
      ),
    parts: z.array(BrokenStorePart).min(1).describe('What is broken, memory files first, then the history'),
  })
  .describe('What is broken in a store and whether the rest can be read');
export type BrokenStore = z.infer<typeof BrokenStore>;
export const MemoryFile = z.object({
  kind: z
    .string()
    .describe(
      'hermes-memory (MEMORY.md) | hermes-user (USER.md) | hermes-soul | hermes-skill | hermes-archive | ' +
        'hermes-pending (pending/memory/*.json) | agent-zero-<area> | mem0',
    ),
  file: z
    .string()
    .describe(
      'Absolute path of the file (or database) that holds the entries; for a store without local files ' +
        "(no StoreDescription.localRoot): where they are, in the store's words (e.g. a URL)",
    ),
  store: Store.optional().describe('The store this file belongs to'),
  entries: z.array(MemoryEntry),
  usage: z
    .object({
      chars: z.number().int().describe('len("\\n§\\n".join(entries)), as Hermes counts it'),
      limit: z.number().int().describe('Char limit from config.yaml (memory.memory_char_limit / user_char_limit)'),
      limitNote: z
        .string()
        .optional()
        .describe(
          'Set when `limit` is Hermes\' default because config.yaml cannot be used, e.g. "config.yaml does not ' +
            'parse" (the file\'s warnings say the error and the fix); absent when the limit is as configured',
        ),
    })
    .optional()
    .describe('Hermes MEMORY.md/USER.md only: usage against the char limit'),
  readOnly: z.string().optional().describe('Why entries here cannot be edited from AgentKeep (absent = editable)'),
  warnings: z
    .array(z.string())
    .optional()
    .describe('Problems found while reading (e.g. embedding model mismatch, non-durable mem0 config)'),
  pending: z
    .boolean()
    .optional()
    .describe(
      'Its entries are writes the agent staged for approval, not memory yet (Hermes memory.write_approval: ' +
        "pending/memory/<id>.json, approved or rejected with Hermes' /memory approve|reject <id>). Each entry: id = " +
        'the pending id, text = the content the write would store (remove: its old_text), createdAt = when it was ' +
        'staged, meta {action, target, oldText?, operations?, summary, origin}. memory.lint leaves them out',
    ),
  broken: StoreProblem.optional().describe(
    'Set when the file (or a file it depends on, e.g. an Agent Zero index.faiss) is damaged or unreadable: `entries` ' +
      'holds only what could still be read (none when the file itself could not be), never "empty", and AgentKeep ' +
      'refuses to write it',
  ),
});
export type MemoryFile = z.infer<typeof MemoryFile>;

/**
 * What a memory store can do, from its adapter (sidecar/memory/<kind>/): the front ends show these
 * and branch on them, never on the store's kind or on the store string.
 */
export const StoreCapabilities = z
  .object({
    edit: z
      .boolean()
      .describe(
        'memory.edit/remove/add work for this kind of store (a store can still be read-only for a reason it ' +
          'states: MemoryFile.readOnly)',
      ),
    provenance: z
      .boolean()
      .describe(
        'memory.show traces an entry to the writes that made it (Hermes: state.db tool calls; mem0: history.db)',
      ),
    budgets: z
      .boolean()
      .describe('Its files carry usage against a char limit (MemoryFile.usage), which memory.lint checks'),
    drift: z
      .boolean()
      .describe("memory.lint checks its files for hand edits the agent's own parser would read differently (drift)"),
    diff: z.boolean().describe("memory.diff reads its entries from a restore point's capture"),
    actions: z
      .boolean()
      .describe(
        'Its session history tells which outside-world actions the agent took since a time (what a restore ' +
          'cannot undo)',
      ),
    lock: z
      .boolean()
      .describe("A restore of its agent state takes the store's own write lock, as the agent's writers do"),
    textFiles: z
      .boolean()
      .describe(
        'Its memory files (MemoryFile.file) are plain text under localRoot, so an editor diff of a file against its ' +
          'capture shows the changes (Hermes MEMORY.md, USER.md, SOUL.md); false for databases and pickles',
      ),
  })
  .describe('What a memory store can do');
export type StoreCapabilities = z.infer<typeof StoreCapabilities>;

/** How a store's machine is reached: this machine, SSH, a VM's QEMU guest agent (socket or Proxmox API), or not at all. */
export const StoreReachVia = z.enum(['local', 'ssh', 'guest-agent', 'none']);
export type StoreReachVia = z.infer<typeof StoreReachVia>;

/**
 * A memory store as its adapter describes it (store.describe, memory.list `descriptions`, agent.status
 * `stores[].description`): from the store string alone (no I/O), so it is there for a missing store too.
 */
export const StoreDescription = z
  .object({
    store: Store.describe('The store string as given'),
    kind: z.string().describe('Store kind (the registered name before the colon), e.g. hermes, agent-zero, mem0'),
    kindName: z.string().describe('The kind as people write it, e.g. Hermes, Agent Zero, mem0'),
    name: z.string().describe('Short name for views, e.g. "agent-home/.hermes" (the last two parts of its path)'),
    location: z
      .string()
      .describe('Where the store is, for display: an absolute path, or a URL for a store reached over the network'),
    localRoot: z
      .string()
      .optional()
      .describe(
        "Absolute local directory that holds the store's files, when it has one; its agent-state paths are " +
          'relative to it. Absent for stores reached through an API',
      ),
    capabilities: StoreCapabilities,
  })
  .describe('A memory store as its adapter describes it');
export type StoreDescription = z.infer<typeof StoreDescription>;

export const ProvenanceTrace = z.object({
  action: z
    .enum(['add', 'replace', 'remove', 'update', 'none', 'consolidate'])
    .describe('What the tool call / history row did to the entry'),
  time: z.string().optional().describe('ISO 8601 UTC'),
  session: z.string().optional().describe('Session id (Hermes sessions.id, mem0 run id)'),
  source: z.string().optional().describe('Session source: cli | telegram | discord | ...'),
  message: z
    .string()
    .optional()
    .describe('The tool call arguments or message text that did it (truncated to 2000 chars)'),
  messageId: z.union([z.string(), z.number()]).optional().describe('Id of the message in the session history'),
  previous: z.string().optional().describe('For replace/update: the text before'),
  messageState: z
    .enum(['compacted', 'rewound'])
    .optional()
    .describe(
      'Hermes state.db v30 messages.active / compacted of the message that made the call (absent: active, or an ' +
        "older schema without the columns). compacted (active 0, compacted 1): summarised out of the agent's " +
        'context by compaction, still kept and shown by Hermes; rewound (active 0, compacted 0): hidden by Hermes ' +
        '(a rewind), used only when no visible call wrote the text',
    ),
});
export type ProvenanceTrace = z.infer<typeof ProvenanceTrace>;
export const Provenance = z.object({
  traces: z.array(ProvenanceTrace).describe('Oldest first'),
  note: z
    .string()
    .optional()
    .describe('Said plainly when no trace exists, and why (no state.db, rows pruned, hand-edited, ...)'),
  unavailable: StoreProblem.optional().describe(
    "Set when the store's history could not be read (e.g. a damaged state.db or history.db): `traces` are then " +
      'unknown, not absent',
  ),
});
export type Provenance = z.infer<typeof Provenance>;

export const LintFinding = z.object({
  kind: z
    .enum([
      'duplicate',
      'near-duplicate',
      'contradiction',
      'superseded',
      'over-budget',
      'drift',
      'untraceable',
      'stale',
      'age',
      'store',
    ])
    .describe('What is wrong'),
  severity: z.enum(['error', 'warning', 'info']),
  entries: z.array(z.string()).describe('Ids of the entries involved (newest last where known)'),
  stores: z.array(Store).optional().describe('Stores involved'),
  message: z.string().describe('One sentence that explains the finding to a person'),
  evidence: z
    .array(z.string())
    .optional()
    .describe('The facts behind it: quoted entry texts, the path/version on the machine, dates'),
  suggestion: z.string().optional().describe('What to do about it'),
});
export type LintFinding = z.infer<typeof LintFinding>;

/**
 * The optional OpenAI-compatible embeddings endpoint of memory.lint (sidecar/memory/lint/embeddings.ts):
 * vectors for the entries without one of their store's own. Off unless given here or in the sidecar's
 * env (AGENTKEEP_EMBEDDINGS_URL / AGENTKEEP_EMBEDDINGS_MODEL); the key only from its env
 * (AGENTKEEP_EMBEDDINGS_KEY). A failing endpoint is a `store` warning, never a failed lint.
 */
export const LintEmbeddings = z
  .object({
    url: z
      .string()
      .min(1)
      .describe(
        'Base URL of an OpenAI-compatible API (POST <url>/embeddings), e.g. http://127.0.0.1:11434/v1 (Ollama); ' +
          'https, or http to this machine only: the entry texts are sent there',
      ),
    model: z.string().min(1).describe('Model name the server serves, e.g. nomic-embed-text'),
  })
  .describe(
    "Embeddings endpoint for entries without a vector of their store's own (default: env AGENTKEEP_EMBEDDINGS_URL / " +
      'AGENTKEEP_EMBEDDINGS_MODEL; none: off); vectors of two models are never compared',
  );

export const MemoryEntryChange = z.object({
  store: Store,
  before: MemoryEntry.optional().describe('Absent for added'),
  after: MemoryEntry.optional().describe('Absent for removed'),
});

/**
 * One write to a memory store on the timeline (memory.history): the agent's own memory tool calls
 * (Hermes state.db, source "agent"; the hook records around them, source "hook"), AgentKeep's writes
 * (memory add/edit/remove, undo, restore-entry, forget, lint --fix: source "agentkeep", from the write
 * log `<stateDir>/memory-backups/<store key>/writes.jsonl`) and what the restore points' captures show
 * changed between two captures (source "restore-point"; the time is the later capture's).
 */
export const MemoryWrite = z.object({
  id: z
    .string()
    .describe(
      'Stable id of this write: "db:<message id>:<n>" (state.db), "log:<line>" (write log), "rp:<restore point>:<n>" (captures)',
    ),
  store: Store,
  source: z
    .enum(['agent', 'hook', 'agentkeep', 'restore-point'])
    .describe(
      "agent: the agent's memory tool (state.db); hook: the same seen by an agent hook; agentkeep: AgentKeep; restore-point: seen between two captures",
    ),
  time: z.string().optional().describe('ISO 8601 UTC; absent when the history keeps no time'),
  action: z.enum(['add', 'replace', 'remove']).describe('What happened to the entry'),
  file: z.string().optional().describe('Absolute path of the memory file written, where known'),
  target: z.string().optional().describe("Hermes memory tool target: memory | user (the file's area)"),
  entry: z.string().optional().describe('Id of the entry as written (add, replace) or as it was (remove)'),
  before: z.string().optional().describe('The entry text before (replace: old text; remove: the text removed)'),
  after: z.string().optional().describe('The entry text after (add, replace)'),
  oldText: z
    .string()
    .optional()
    .describe(
      "Hermes replace/remove: the tool's old_text (a part of the entry); `before` is the whole entry where known",
    ),
  session: z.string().optional().describe("The agent's session id"),
  toolCallId: z.string().optional().describe('The tool call id (state.db, hook records)'),
  restorePoint: z
    .string()
    .optional()
    .describe('restore-point: the capture that shows it; agentkeep restore-entry: where the text came from'),
  why: z
    .string()
    .optional()
    .describe('AgentKeep writes: what made it (memory edit, undo of W, restore-entry, forget, lint --fix)'),
  undoOf: z.string().optional().describe('AgentKeep undo: the id of the write it undid'),
  group: z.string().optional().describe('Writes applied as one change (forget, lint --fix): undone together'),
  refused: z.boolean().optional().describe("true when the agent's tool call was refused (nothing written)"),
});
export type MemoryWrite = z.infer<typeof MemoryWrite>;

/** One change of a reviewed edit set (memory.forget, memory.lintFix). */
export const MemoryEditItem = z.object({
  store: Store,
  file: z.string().describe('Absolute path of the file that holds the entry'),
  action: z.enum(['remove', 'replace']),
  entry: z.string().describe('Id of the entry changed'),
  before: z.string().describe('Its text now'),
  after: z.string().optional().describe('replace: the new text'),
  reason: z.string().describe('Why (the finding and its evidence, or the fact forgotten)'),
});

/** A reviewable change: the edits, each file before and after, and the unified diff of them all. */
export const MemoryEditSet = z.object({
  edits: z.array(MemoryEditItem),
  files: z
    .array(
      z.object({
        store: Store,
        file: z.string(),
        contentHash: z.string().describe('sha256 of the file when the change was proposed (the compare-and-swap)'),
        before: z.string().describe('The file content now'),
        after: z.string().describe('The file content with the change'),
      }),
    )
    .describe('Each file the change touches'),
  diff: z.string().describe('Unified diff of every file (a/ = now, b/ = with the change)'),
  skipped: z.array(z.string()).optional().describe('What was left out and why (e.g. contradictions need a person)'),
  applied: z.boolean().describe('true: written (apply); false: a proposal only'),
  group: z.string().optional().describe('When applied: the write group (memory.undoWrite {write: group} undoes it)'),
});

/**
 * A warning an agent hook recorded: a restore point it could not take around the agent's own tool
 * call (target busy, disk full, hypervisor unreachable, over its time budget). Kept in
 * `<stateDir>/hooks/warnings.jsonl` (sidecar/core/hookWarnings.ts); agent.status and `restore-point
 * list` show the recent ones.
 */
export const HookWarning = z.object({
  time: z.string().describe('ISO 8601, UTC'),
  target: Target,
  agent: z.string().optional().describe('Agent name'),
  tool: z.string().optional().describe('The agent tool the hook fired for'),
  session: z.string().optional().describe("The agent's session id"),
  toolCallId: z.string().optional(),
  phase: z
    .enum(['pre', 'post', 'memory'])
    .describe('pre: before the tool ran; post: after; memory: the memory write record'),
  blocked: z
    .boolean()
    .describe('true: the agent is fail-closed and the tool call was blocked; false: it was let through'),
  message: z.string().describe('What failed, in one sentence'),
});
export type HookWarning = z.infer<typeof HookWarning>;

/** A restore the agent asked for (MCP restore_request); it never runs until a person approves it. */
export const RestoreRequest = z.object({
  id: z.string().describe('Request id, req_YYYYMMDD_HHMMSS_xxxx'),
  createdAt: z.string().describe('ISO 8601, UTC'),
  target: Target,
  stores: z.array(Store).optional().describe('Stores the restore would put back (scope agent or both)'),
  restorePoint: z.string().describe('Id of the restore point to restore'),
  scope: Scope,
  reason: z.string().describe("The agent's reason, as it gave it"),
  agent: z.string().optional().describe('Agent name'),
  session: z.string().optional(),
  status: z
    .enum(['pending', 'approved', 'denied', 'failed'])
    .describe('pending: waits for a person; approved: restored; denied; failed: approved but the restore failed'),
  decidedAt: z.string().optional().describe('ISO 8601, UTC: when it was approved or denied'),
  decidedBy: z
    .string()
    .optional()
    .describe('cli | protocol | auto (the agent setting that allows scope-agent restores)'),
  note: z.string().optional().describe("The person's note on deny, or the restore's error on failed"),
  undo: z.string().optional().describe('Approved: the pre-restore point (restore it to undo the restore)'),
});
export type RestoreRequest = z.infer<typeof RestoreRequest>;

/** The name of a named agent (`agentkeep agent add NAME`), as given to `--agent NAME`. */
export const AgentName = z
  .string()
  .regex(
    /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/,
    'an agent name starts with a letter and has at most 64 letters, digits, "_", "." or "-"',
  )
  .describe('Name of a named agent, e.g. "hermes-vm" (a letter first, then letters, digits, _ . -; at most 64)');

/** Per-agent settings as kept under `agents.<name>` of <stateDir>/config.json. */
export const AgentSettings = z
  .object({
    target: Target,
    stores: z
      .array(Store)
      .optional()
      .describe('Stores whose agent state each restore point captures; absent: the Hermes homes found in the target'),
    failClosed: z
      .boolean()
      .optional()
      .describe(
        "Hooks block the agent's tool call when a restore point cannot be taken (absent/false: fail open, the call " +
          'goes through with a warning). apt hooks are always fail-open',
      ),
    allowAgentRestores: z
      .boolean()
      .optional()
      .describe(
        "The agent's own restore requests (MCP restore_request) of scope agent run without a person's approval " +
          '(absent/false: every request waits for request.approve). Scope machine and both always wait',
      ),
  })
  .describe("One named agent's settings in <stateDir>/config.json");
export type AgentSettings = z.infer<typeof AgentSettings>;

/** A named agent as agent.list returns it. */
export const NamedAgent = AgentSettings.extend({
  name: AgentName,
  failClosed: z.boolean().describe('See AgentSettings.failClosed (false when not set)'),
  default: z.boolean().describe('This is the default agent (used when a command names no --agent and no --target)'),
}).describe('A named agent');
export type NamedAgent = z.infer<typeof NamedAgent>;

// ---------------------------------------------------------------------------------------------
// Restore preview (restorePoint.preview)
// ---------------------------------------------------------------------------------------------

/** Most items of each list in a restore preview, unless `limit` says otherwise. */
export const PREVIEW_LIMIT = 50;

/**
 * One path of a preview list with the listed paths under it folded in: a directory created since
 * the restore point is one item, `inside` counts its listed descendants.
 */
export const PathGroup = z.object({
  path: z.string().describe('Target-relative POSIX path (agent state: `<store>:<rel>`)'),
  inside: z.number().int().min(0).describe('Listed paths under it (0 for a file)'),
});
export type PathGroup = z.infer<typeof PathGroup>;

/** A list of paths, counted whole and sampled: top-most paths first (descendants folded in), sorted. */
export const PathSample = z.object({
  count: z.number().int().min(0).describe('How many paths there are in all (with the descendants of listed folders)'),
  groups: z.number().int().min(0).describe('How many top-most paths (PathGroup items) there are in all'),
  items: z.array(PathGroup).describe('The first top-most paths, sorted, at most `limit` of them'),
});
export type PathSample = z.infer<typeof PathSample>;

/** Memory entries, counted whole and sampled. */
export const EntrySample = z.object({
  count: z.number().int().min(0),
  items: z.array(MemoryEntry).describe('The first entries (with `store` set), at most `limit`'),
});
export type EntrySample = z.infer<typeof EntrySample>;

/** Where a git HEAD points. */
export const GitHead = z.object({
  ref: z.string().optional().describe('The ref HEAD names, e.g. refs/heads/main; absent for a detached HEAD'),
  commit: z.string().optional().describe('The commit HEAD resolves to (40 hex); absent for a branch without commits'),
});
export type GitHead = z.infer<typeof GitHead>;

/** A git repository inside the target whose HEAD or branches a restore changes (issue: cline#13550). */
export const GitRepoChange = z.object({
  path: z.string().describe('Target-relative path of the repository (the folder that holds .git; "." = the root)'),
  effect: z
    .enum(['moved', 'removed', 'brought-back'])
    .describe(
      'moved: HEAD or branches go back (commits made since leave the repository with its .git); removed: ' +
        'the repository was made since the restore point and the restore deletes it; brought-back: deleted ' +
        'since, it comes back',
    ),
  head: z
    .object({
      current: GitHead.optional().describe('HEAD now'),
      restored: GitHead.optional().describe('HEAD after the restore'),
    })
    .describe('HEAD now and after the restore (a side is absent when the repository does not exist then)'),
  branches: z
    .array(
      z.object({
        name: z.string().describe('Branch name (refs/heads/<name>)'),
        current: z.string().optional().describe('Commit now; absent: the restore brings the branch back'),
        restored: z.string().optional().describe('Commit after the restore; absent: the restore deletes the branch'),
      }),
    )
    .describe('Branches whose commit the restore changes, by name'),
  note: z.string().optional().describe('What could not be read (reftable refs, a .git file pointing elsewhere)'),
});
export type GitRepoChange = z.infer<typeof GitRepoChange>;

/** What a machine rollback of a VM or container does to the guest (backend capabilities + the snapshot). */
export const RestoreEffects = z.object({
  wholeMachine: z.boolean().describe('The whole guest goes back (disks, and RAM if the snapshot has it): no file list'),
  stopsGuest: z.boolean().describe('A running guest is hard-stopped first (Proxmox): unsaved work in it is lost'),
  resumesRam: z.boolean().describe('The snapshot holds RAM state: the guest resumes running where it was'),
  canStartAfter: z
    .boolean()
    .describe('Without RAM state the guest stays stopped after the rollback; restorePoint.restore `start` starts it'),
});
export type RestoreEffects = z.infer<typeof RestoreEffects>;

/** The result of restorePoint.preview. */
export const RestorePreview = z.object({
  restorePoint: RestorePoint.describe('The restore point the preview is of'),
  scope: Scope,
  machine: z
    .object({
      added: PathSample.describe('Created since the restore point: the restore removes them'),
      changed: PathSample.describe('Changed since: the restore reverts them'),
      removed: PathSample.describe('Deleted since: the restore brings them back'),
    })
    .optional()
    .describe(
      'Files a machine restore changes, where the backend can diff (capabilities.diff); absent for scope agent ' +
        'and whole-VM snapshots',
    ),
  agentFiles: PathSample.optional().describe(
    'Agent-state files (`<store>:<rel>`) the restore puts back; absent for scope machine',
  ),
  agentLeftAlone: PathSample.optional().describe(
    'Agent-state files (`<store>:<rel>`) that were broken when the restore point was taken (AgentCapture.broken): ' +
      'not in its capture, so the restore leaves them as they are now; absent when none or for scope machine',
  ),
  effects: RestoreEffects.optional().describe(
    'VM and container targets, scopes machine and both: what the rollback does to the guest',
  ),
  memory: z
    .object({
      lost: EntrySample.describe('Entries there now that the restore takes away: learned/changed since (agent, both)'),
      broughtBack: EntrySample.describe('Entries removed or changed since that the restore brings back (agent, both)'),
      kept: EntrySample.describe('Entries learned or changed since that stay: scope machine keeps the current memory'),
    })
    .optional()
    .describe('Memory entries, from memory.diff of each store; absent when no store was compared (none given)'),
  actions: z
    .object({
      count: z.number().int().min(0),
      items: z.array(ProvenanceTrace).describe('Oldest first, at most `limit`'),
    })
    .describe("The agent's outside-world actions since the restore point (messages, pushes): no restore undoes them"),
  gitRepos: z.array(GitRepoChange).describe('Git repositories in the target whose HEAD or branches the restore moves'),
  warnings: z.array(z.string()).describe('What the preview could not tell, e.g. a store it could not compare'),
});
export type RestorePreview = z.infer<typeof RestorePreview>;

// ---------------------------------------------------------------------------------------------
// Methods
// ---------------------------------------------------------------------------------------------

/** A method: params and result schemas plus a one-line description. */
export interface MethodDef<P extends z.ZodTypeAny, R extends z.ZodTypeAny> {
  method: string;
  description: string;
  params: P;
  result: R;
}
function method<P extends z.ZodTypeAny, R extends z.ZodTypeAny>(
  name: string,
  description: string,
  params: P,
  result: R,
): MethodDef<P, R> {
  return { method: METHOD_PREFIX + name, description, params, result };
}

export const RetentionParams = z
  .object({
    keep: z.number().int().min(0).optional().describe('Newest restore points to keep (default 20)'),
    keepImportant: z.number().int().min(0).optional().describe('Newest important restore points to keep (default 10)'),
    minAgeMs: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Restore points younger than this are never deleted, in milliseconds (default 3600000 = 1 h)'),
  })
  .describe('Retention settings; unset fields come from <stateDir>/config.json, else the defaults');

/** restorePoint.create `reuse`: the default age limit of a restore point to reuse, in milliseconds. */
export const REUSE_WINDOW_MS = 60_000;

/**
 * How long a restore with scope machine on a VM waits after the rollback for the guest's stores to be
 * reachable again before it keeps the captured agent state for a re-apply (restorePoint.restore
 * `writeBackTimeoutMs`), in milliseconds.
 */
export const WRITE_BACK_TIMEOUT_MS = 120_000;

/**
 * The write-back of a restore with scope machine on a target whose stores the rollback puts back too
 * (a VM: no local root): the stores' agent state is captured in the pre-restore point before the
 * rollback and written back once the guest's stores are reachable again (sidecar/core/writeback.ts).
 */
export const PendingWriteBack = z
  .object({
    id: z.string().describe('The restore point that was restored (scope machine)'),
    undo: z.string().describe('The pre-restore point whose agent-state capture waits to be written back'),
    stores: z.array(Store).describe('The stores whose agent state was not written back'),
    since: z.string().describe('When the write-back gave up (ISO 8601, UTC)'),
    message: z.string().describe('Why it could not write back, e.g. "ssh://root@10.0.0.5:22/root/.hermes: timed out"'),
    actions: z
      .array(NextAction)
      .optional()
      .describe('The one command that writes it back: restore `undo` with scope agent and these stores'),
  })
  .describe('Agent state captured before a VM rollback that is still to be written back into the guest');
export type PendingWriteBack = z.infer<typeof PendingWriteBack>;

export const WriteBack = z.object({
  status: z
    .enum(['done', 'pending'])
    .describe('done: written back into every store; pending: kept for a re-apply (see `pending`)'),
  stores: z.array(Store).describe('The stores whose agent state was kept through the rollback'),
  waitedMs: z.number().int().describe('How long the write-back waited for the stores to be reachable, in milliseconds'),
  pending: PendingWriteBack.optional().describe('With status pending: what waits, why, and the re-apply action'),
});

const ProgressToken = z.string().optional().describe('If set, progress notifications carry this token');

export const Methods = {
  restorePointCreate: method(
    'restorePoint.create',
    'Create a restore point: machine snapshot of the target + capture of each store. Waits for the target lock. Retention runs afterwards (restorePoint.prune with `retention`, else <stateDir>/config.json, else the defaults); a failing retention run does not fail the create.',
    z.object({
      target: Target,
      label: z.string().optional(),
      kind: RestorePointKind.optional(),
      reason: Reason.optional(),
      stores: z
        .array(Store)
        .optional()
        .describe('Stores whose agent state is captured (absent, not []: the Hermes homes found in the target)'),
      pairOf: z.string().optional().describe('For a post restore point: the id of its pre'),
      important: z
        .boolean()
        .optional()
        .describe('Mark the restore point important (retention keeps the newest 10 important ones)'),
      vmstate: z
        .boolean()
        .optional()
        .describe('Include RAM state (qemu and Proxmox qemu targets; QEMU always does). Ignored elsewhere'),
      retention: RetentionParams.optional().describe(
        'Retention applied after the create (the extension passes agentkeep.retention.*)',
      ),
      reuse: z
        .boolean()
        .optional()
        .describe(
          'Reuse instead of creating: when the newest restore point of the target is younger than ' +
            'reuseWithinMs, holds a capture of every store of this create, and nothing differs from it ' +
            '(restorePoint.diff empty: backends with capabilities.diff only), return it with `reused: true` ' +
            '(nothing is created, retention does not run)',
        ),
      reuseWithinMs: z
        .number()
        .int()
        .positive()
        .max(24 * 3600 * 1000)
        .optional()
        .describe('With reuse: the age limit, in milliseconds (default 60000 = REUSE_WINDOW_MS)'),
      progressToken: ProgressToken,
    }),
    RestorePoint.extend({
      reused: z
        .boolean()
        .optional()
        .describe('true: `reuse` found a restore point to reuse and returned it; nothing was created'),
      warnings: z
        .array(z.string())
        .optional()
        .describe(
          "What the user should know, e.g. the target's restore points use more than 90% of the size cap (not stored in the journal)",
        ),
      notices: z
        .array(Notice)
        .optional()
        .describe(
          'The same warnings, each with what the user can do about it (hint, next actions); front ends that render actions show these instead of `warnings`',
        ),
      pruned: z
        .array(z.object({ id: z.string(), reason: z.string() }))
        .optional()
        .describe('Older restore points that the retention run after this create deleted, with why (absent when none)'),
    }),
  ),
  restorePointList: method(
    'restorePoint.list',
    'List the restore points of a target, newest first. Proxmox targets also list the AgentKeep snapshots found on the guest but missing from the journal (rebuilt from their description marker, without agent capture).',
    z.object({ target: Target }),
    z.array(RestorePoint),
  ),
  restorePointDiff: method(
    'restorePoint.diff',
    'What differs between a restore point and now, i.e. what a restore would undo.',
    z.object({ target: Target, id: z.string(), stores: z.array(Store).optional() }),
    ChangeSummary,
  ),
  restorePointPreview: method(
    'restorePoint.preview',
    'What a restore of `id` with `scope` would do, changing nothing (the confirmation of every front end ' +
      'shows it): files it removes, reverts and brings back (backends with capabilities.diff; the same ' +
      'agent-state filter as the restore), agent-state files it puts back, for a VM what happens to the guest ' +
      '(hard stop, RAM state, start), memory entries lost, brought back and kept, the outside-world actions ' +
      'since (never undone), and git repositories inside the target whose HEAD or branches change. Refuses ' +
      'what the restore would refuse (scope agent without a capture, a store the restore point did not ' +
      'capture). Takes no lock.',
    z.object({
      target: Target,
      id: z.string(),
      scope: Scope,
      stores: z
        .array(Store)
        .optional()
        .describe('As restorePoint.restore: default the stores the restore point captured'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(10000)
        .optional()
        .describe('Most items of each list (paths, entries, actions), default 50 (PREVIEW_LIMIT); counts are whole'),
    }),
    RestorePreview,
  ),
  restorePointRestore: method(
    'restorePoint.restore',
    'Restore a restore point with a scope. Captures the current state first (kind pre-restore) so the restore can be undone.',
    z.object({
      target: Target,
      id: z.string(),
      scope: Scope,
      stores: z.array(Store).optional(),
      start: z
        .boolean()
        .optional()
        .describe('VM targets: start the guest after a rollback to a snapshot without RAM state (Proxmox `start`)'),
      noUndoPoint: z
        .boolean()
        .optional()
        .describe(
          'Restore without taking the pre-restore restore point first, so the restore cannot be undone (for a state dir too full to hold it: the DiskFull error of a restore offers it). Refused (ConfirmationRequired) unless `confirmed` is true. CLI: --no-undo-point --yes',
        ),
      confirmed: z.boolean().optional().describe('The user confirmed a restore without an undo point (noUndoPoint)'),
      writeBackTimeoutMs: z
        .number()
        .int()
        .min(0)
        .max(3600 * 1000)
        .optional()
        .describe(
          'Scope machine on a target without a local root (a VM): how long to wait after the rollback for the ' +
            "guest's stores to be reachable again to write the agent state back, in milliseconds (default 120000 = " +
            'WRITE_BACK_TIMEOUT_MS; 0: do not wait, keep it pending). CLI: --write-back-timeout SECONDS',
        ),
      progressToken: ProgressToken,
    }),
    z.object({
      restored: RestorePoint,
      undo: RestorePoint.optional().describe(
        'The pre-restore capture; restore it to undo this restore. Absent only with noUndoPoint',
      ),
      changes: ChangeSummary,
      machineState: z
        .string()
        .optional()
        .describe('VM targets: guest state after the rollback (running | stopped | paused)'),
      warnings: z
        .array(z.string())
        .optional()
        .describe('What the user must know (e.g. "the VM was stopped by the rollback; start it")'),
      writeBack: WriteBack.optional().describe(
        'Scope machine on a target without a local root (a VM): the agent state captured before the rollback and ' +
          "written back into the guest's stores once they were reachable again (done), or kept for a re-apply (pending)",
      ),
    }),
  ),
  restorePointDelete: method(
    'restorePoint.delete',
    'Delete a restore point (objects still used by others are kept).',
    z.object({ target: Target, id: z.string() }),
    z.object({ deleted: z.string(), freedBytes: z.number().int() }),
  ),
  restorePointPrune: method(
    'restorePoint.prune',
    'Apply retention to a target: keep the newest `keep` (default 20) and the newest `keepImportant` (default 10) important restore points; never delete one younger than an hour, the newest one, or half of a pre/post pair; a pre/post pair whose sides do not differ does not count toward `keep`. Deletes the rest (unless dryRun), then garbage-collects. Also run with the defaults after every restorePoint.create. Takes the target lock.',
    z.object({
      target: Target,
      dryRun: z.boolean().optional().describe('Only report what would be deleted; change nothing'),
      keep: z.number().int().min(0).optional().describe('Newest restore points to keep (default 20)'),
      keepImportant: z
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Newest important restore points to keep (default 10)'),
      minAgeMs: z
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Never delete a restore point younger than this, in milliseconds (default 3600000 = 1 h)'),
    }),
    z.object({
      deleted: z
        .array(z.object({ id: z.string(), reason: z.string() }))
        .describe('Deleted (or, with dryRun, to be deleted), newest first, with why'),
      kept: z.array(z.object({ id: z.string(), reason: z.string() })).describe('Kept, newest first, with why'),
      freedBytes: z
        .number()
        .int()
        .describe(
          'Bytes of objects removed by the garbage collection (0 for dryRun, or while another create/restore runs)',
        ),
      estimatedFreeBytes: z
        .number()
        .int()
        .optional()
        .describe(
          'Estimate of the bytes deleting `deleted` frees: objects (dir) only they reference within the target, btrfs exclusive extents, else their newBytes',
        ),
    }),
  ),
  restorePointUsage: method(
    'restorePoint.usage',
    "Disk use of a target's restore points: per restore point and for the whole target (each stored object or extent counted once), with the size cap (sizeCapBytes in <stateDir>/config.json, default 10 GiB). btrfs targets walk their snapshots (btrfs filesystem du): seconds for large trees.",
    z.object({ target: Target }),
    z.object({
      target: Target,
      bytes: z
        .number()
        .int()
        .describe(
          "Bytes the target's restore points hold: distinct objects of its manifests and agent captures (dir), extents of its snapshots counted once plus agent captures (btrfs), else the sum of newBytes; plus metaBytes",
        ),
      metaBytes: z
        .number()
        .int()
        .describe(
          "Of bytes: the target's snapshot data in the state dir besides contents (dir manifests and their index) and its journal",
        ),
      stateDirBytes: z
        .number()
        .int()
        .describe(
          'Everything the state dir holds, all targets together (objects, manifests, journals, memory backups, locks), in bytes',
        ),
      capBytes: z.number().int().describe('The size cap of one target, in bytes'),
      level: z.enum(['ok', 'near', 'over']).describe('near: above 90% of the cap; over: above the cap'),
      points: z
        .array(
          z.object({
            id: z.string(),
            bytes: z.number().int().describe('Logical size'),
            newBytes: z
              .number()
              .int()
              .describe(
                'Bytes held by this restore point alone, i.e. about what deleting it frees (dir: objects no other restore point of the target holds; btrfs: exclusive extents; VM backends: what was new at create)',
              ),
          }),
        )
        .describe('Per restore point, newest first'),
    }),
  ),
  restorePointKeep: method(
    'restorePoint.keep',
    'Record that the change after this restore point is kept (status kept). The restore point stays available.',
    z.object({ target: Target, id: z.string() }),
    RestorePoint,
  ),
  restorePointLabel: method(
    'restorePoint.label',
    'Rename a restore point and/or mark it important or not (invalid_params when neither is given). Proxmox: also rewrites the human part of the snapshot description (PUT /nodes/{node}/{type}/{vmid}/snapshot/{snapname}/config), keeping the AgentKeep marker. Takes the target lock.',
    z.object({
      target: Target,
      id: z.string(),
      label: z
        .string()
        .trim()
        .min(1, 'the label is empty')
        .max(200, 'at most 200 characters')
        .optional()
        .describe('New label'),
      important: z.boolean().optional().describe('Mark important (true) or not (false); absent = unchanged'),
    }),
    RestorePoint,
  ),
  restorePointCompare: method(
    'restorePoint.compare',
    'What changed between two restore points of one target (e.g. the pre and post of a command): `added` = paths in `to` but not in `from`, `removed` = in `from` but not in `to`, `changed` = content, mode, type or link target differ; `agentChanged` = agent-state files (`<store>:<rel>`) that differ between their captures, for stores both captured.',
    z.object({
      target: Target,
      from: z.string().describe('Id of the older restore point (the "before" side)'),
      to: z.string().describe('Id of the newer restore point (the "after" side)'),
    }),
    ChangeSummary,
  ),
  restorePointReadFile: method(
    'restorePoint.readFile',
    'One file as it was at a restore point: a target-relative POSIX path from the machine snapshot, or `<store>:<rel>` (as in ChangeSummary.agentChanged) from an agent-state capture. A path the restore point does not hold answers type "none". Files larger than maxBytes are refused (file_error).',
    z.object({
      target: Target,
      id: z.string(),
      path: z.string().min(1, 'the path is empty: give a target-relative path such as workspace/package.json'),
      maxBytes: z
        .number()
        .int()
        .positive()
        .max(64 * 1024 * 1024)
        .optional()
        .describe('Largest content returned, in bytes (default 2 MiB = 2097152)'),
    }),
    z.object({
      path: z.string().describe('The path as asked'),
      type: z
        .enum(['file', 'symlink', 'directory', 'none'])
        .describe('none: the restore point does not hold this path'),
      size: z.number().int().describe('Size in bytes (0 for directory and none; the link text length for a symlink)'),
      encoding: z.enum(['utf8', 'base64']).describe('utf8 for valid UTF-8 text without NUL bytes; base64 otherwise'),
      content: z.string().describe('The file content (a symlink: its target; directory/none: empty)'),
    }),
  ),
  memoryList: method(
    'memory.list',
    'List the entries of memory stores with their usage against the char limits.',
    z.object({ stores: z.array(Store) }),
    z.object({
      stores: z.array(MemoryFile),
      descriptions: z
        .array(StoreDescription)
        .describe('One per store listed, in order (a store named twice is listed once)'),
    }),
  ),
  storeDescribe: method(
    'store.describe',
    'What each memory store is and what it can do (kind, display name, location, local root, capabilities), ' +
      'from the store strings alone: no I/O, so it works for a missing store. BadStore for a string that does ' +
      'not parse or names an unregistered kind.',
    z.object({ stores: z.array(Store).min(1) }),
    z.array(StoreDescription),
  ),
  storeDetect: method(
    'store.detect',
    'Memory stores found in a local directory by every registered store kind (Hermes homes, Agent Zero roots, ' +
      '~/.mem0): what a create without stores captures for a target with this root. InvalidParams for a ' +
      'relative path; [] for a directory that holds none or does not exist.',
    z.object({ root: z.string().min(1).describe('Absolute local directory, e.g. the folder of a dir: target') }),
    z.array(StoreDescription),
  ),
  memoryShow: method(
    'memory.show',
    'One memory entry with its provenance (Hermes: the `memory` tool calls in state.db that added or replaced it). The id may be a unique prefix (at least 4 chars).',
    z.object({ stores: z.array(Store).min(1), entry: z.string().min(1) }),
    z.object({
      store: Store,
      file: MemoryFile.omit({ entries: true }),
      entry: MemoryEntry,
      contentHash: z.string().describe('sha256 of the file as read (pass it back to edit/remove)'),
      provenance: Provenance,
    }),
  ),
  memoryEdit: method(
    'memory.edit',
    "Replace the text of one entry, under the store's own lock, temp file + rename, refusing when the file no longer parses back to its entries (drift: a .bak is kept) or when its content hash is no longer `expectedHash`. A failed edit leaves the store byte-identical. The replaced state is captured first (undo). Errors: conflict (hash changed, drift, ambiguous id prefix), over_budget, entry_not_found, unsupported (read-only file).",
    z.object({ store: Store, entry: z.string().min(1), text: z.string().min(1), expectedHash: z.string().optional() }),
    z.object({
      entry: MemoryEntry.describe('The entry as written (new id for Hermes)'),
      previous: MemoryEntry,
      contentHash: z.string(),
      undo: z
        .object({ store: Store, entry: z.string(), text: z.string() })
        .describe('memory.edit params that undo this edit'),
    }),
  ),
  memoryRemove: method(
    'memory.remove',
    'Delete one entry, with the same safety as memory.edit (Agent Zero: through its own HTTP API when configured).',
    z.object({ store: Store, entry: z.string().min(1), expectedHash: z.string().optional() }),
    z.object({
      removed: MemoryEntry,
      contentHash: z.string(),
      undo: z
        .object({ store: Store, text: z.string(), file: z.string().optional() })
        .describe('What to add back to undo'),
    }),
  ),
  memoryAdd: method(
    'memory.add',
    'Add an entry (used by undo of remove). Hermes: appended to MEMORY.md (file memory) or USER.md (file user).',
    z.object({
      store: Store,
      text: z.string().min(1),
      file: z
        .string()
        .optional()
        .describe(
          'hermes: memory | user (default memory); agent-zero: [<subdir>/]<area>; mem0: its owner, user_id=NAME ' +
            '(or agent_id= / run_id=, joined with &; default the store options)',
        ),
      expectedHash: z.string().optional(),
    }),
    z.object({
      entry: MemoryEntry,
      contentHash: z.string(),
      alreadyPresent: z
        .boolean()
        .optional()
        .describe('true when the exact entry was already there: nothing was written'),
    }),
  ),
  memoryLint: method(
    'memory.lint',
    'Findings across the stores: duplicates, near-duplicates, contradictions, over budget, hand-edit drift, untraceable entries, stale claims that disagree with the machine (checked against `target` when given), age.',
    z.object({ stores: z.array(Store).min(1), target: Target.optional(), embeddings: LintEmbeddings.optional() }),
    z.object({ findings: z.array(LintFinding) }),
  ),
  memoryDiff: method(
    'memory.diff',
    "Entries added, removed and changed between a restore point's agent-state capture and now (or another restore point).",
    z.object({
      target: Target,
      stores: z.array(Store).optional(),
      from: z.string().describe('Restore point id'),
      to: z.string().optional().describe('Restore point id, or "now" (default)'),
    }),
    z.object({
      added: z.array(MemoryEntryChange),
      removed: z.array(MemoryEntryChange),
      changed: z.array(MemoryEntryChange),
      actions: z
        .array(ProvenanceTrace)
        .optional()
        .describe(
          'Agent actions since `from` that a rollback cannot undo (messages sent, web requests, git pushes ...), ' +
            'from the session history',
        ),
      warnings: z
        .array(z.string())
        .optional()
        .describe(
          'Files left out because they are broken on one side (MemoryFile.broken, entries unknown): their entries ' +
            'are not reported as added or removed',
        ),
    }),
  ),
  memoryHistory: method(
    'memory.history',
    "Every write to the stores, oldest first (per entry with `entry`): the agent's memory tool calls in its session history (Hermes state.db: action, target, content, old_text, session, tool call id), the agent hooks' records around them, AgentKeep's own writes (write log) and what the restore points of `target` captured changed. A store history that cannot be read is a warning, never an empty timeline.",
    z.object({
      stores: z.array(Store).min(1),
      entry: z
        .string()
        .optional()
        .describe('Only the writes of this entry (id or unique prefix, also an entry that is gone): its whole chain'),
      file: z
        .string()
        .optional()
        .describe('Only the writes to this file: its absolute path, or its name (MEMORY.md, USER.md)'),
      target: Target.optional().describe('Whose restore points to read (default: none)'),
    }),
    z.object({
      writes: z.array(MemoryWrite),
      warnings: z.array(z.string()).optional().describe('Histories that could not be read, and why'),
    }),
  ),
  memoryUndoWrite: method(
    'memory.undoWrite',
    "Undo one write of the timeline (or a group: forget, lint --fix): put the entry's text back as it was before it (add → remove, replace → replace back, remove → add), each as a compare-and-swap on the file's current content under the store's lock. Refused (Conflict) when the entry was changed again since (its text after the write is no longer there). The undo is itself a write in the log, so it can be undone.",
    z.object({
      stores: z.array(Store).min(1),
      write: z.string().min(1).describe('MemoryWrite.id or MemoryWrite.group'),
      target: Target.optional().describe('For writes seen by restore points'),
    }),
    z.object({
      undone: z.array(MemoryWrite),
      writes: z.array(MemoryWrite).describe('The undo writes (undoable)'),
      skipped: z
        .array(z.string())
        .optional()
        .describe('Removes not undone because their text is in the file (an exact copy that stayed)'),
    }),
  ),
  memoryRestoreEntry: method(
    'memory.restoreEntry',
    "Bring back one entry from a restore point's capture without restoring the store: its text is added (at the end) to the file of the same kind; nothing else changes. alreadyPresent (nothing written) when the text is there now. The write is logged (restorePoint) and can be undone with memory.undoWrite.",
    z.object({
      target: Target,
      from: z.string().describe('Restore point id'),
      store: Store,
      entry: z.string().min(1).describe('Entry id (or unique prefix) in the capture'),
    }),
    z.object({ entry: MemoryEntry, alreadyPresent: z.boolean().optional(), write: MemoryWrite.optional() }),
  ),
  memoryForget: method(
    'memory.forget',
    "Forget a fact everywhere: the entry (or every entry that contains `text`) and its copies (same text, whitespace and case aside) in every file of every store, as one reviewed change: without apply a proposal (edits, files before/after, unified diff); with apply and the proposal's hashes it is written (refused when a file changed since) as one undo group.",
    z.object({
      stores: z.array(Store).min(1),
      entry: z.string().optional().describe('Entry id (or unique prefix): it and its copies'),
      text: z.string().optional().describe('Every entry that contains this text (case-insensitive)'),
      apply: z.boolean().optional(),
      expected: z
        .record(z.string(), z.string())
        .optional()
        .describe("apply: file → contentHash from the proposal (the compare-and-swap); absent: the files' hashes now"),
    }),
    MemoryEditSet,
  ),
  memoryLintFix: method(
    'memory.lintFix',
    "One edit set from the current lint findings: of duplicates and near-duplicates keep the newest, drop the others; of a superseded entry drop the older ones (the finding's evidence says which is newer). Contradictions are left to a person (skipped). Without apply a proposal with its unified diff; with apply and the proposal's hashes it is written, refused when a file changed since, as one undo group.",
    z.object({
      stores: z.array(Store).min(1),
      target: Target.optional(),
      embeddings: LintEmbeddings.optional(),
      apply: z.boolean().optional(),
      expected: z.record(z.string(), z.string()).optional().describe('apply: file → contentHash from the proposal'),
    }),
    MemoryEditSet,
  ),
  agentDiscover: method(
    'agent.discover',
    'Agents the credentials can see: Proxmox guests in the cluster with the tag (GET /cluster/resources?type=vm), as targets.',
    z.object({
      target: Target.describe('Any target on the host, or proxmox://HOST[:PORT]'),
      tag: z.string().optional().describe('Proxmox tag (default "agent"); "" lists every guest'),
    }),
    z.array(
      z.object({
        target: Target,
        name: z.string().optional(),
        node: z.string(),
        vmid: z.number().int(),
        type: z.enum(['qemu', 'lxc']),
        status: z.string().describe('running | stopped | paused ...'),
        lock: z.string().optional().describe('Proxmox lock (backup, snapshot, snapshot-delete, ...)'),
        tags: z.array(z.string()),
      }),
    ),
  ),
  agentMemoryReach: method(
    'agent.memoryReach',
    "Whether an agent's memory is reachable and how: through each named store (its machine: this one, SSH, or " +
      "the VM's QEMU guest agent) or, with no store named, the stores found in the target: a dir/btrfs target's " +
      'tree, or a Proxmox VM probed through its guest agent (agent/exec: Hermes homes /root/.hermes, ' +
      '/home/NAME/.hermes, a running HERMES_HOME, profiles; Agent Zero /a0, ~/agent-zero with usr/memory). Nothing ' +
      'is written. Not reachable comes with the reason and the fix (no guest agent configured or running, VM ' +
      'stopped, a container, no store named for a plain QEMU VM).',
    z.object({
      target: Target,
      stores: z.array(Store).optional().describe('The stores named in the agent config; absent or empty: probe'),
    }),
    z.object({
      target: Target,
      reachable: z.boolean().describe('Some store of the agent can be read'),
      via: StoreReachVia.describe('How the memory is reached (the first store that can be read; none when none)'),
      how: z.string().describe('The same in words, e.g. "through the QEMU guest agent (…)", "over SSH to root@h:22"'),
      reason: z.string().optional().describe('Why it is not reachable (absent when reachable)'),
      hint: z.string().optional().describe('The fix for `reason`'),
      found: z.boolean().describe('The stores were found by probing the target (none were named)'),
      stores: z.array(
        z.object({
          store: Store,
          via: StoreReachVia,
          reachable: z.boolean(),
          message: z.string().optional().describe('Why this store cannot be read'),
          description: StoreDescription.optional(),
        }),
      ),
    }),
  ),
  targetDescribe: method(
    'target.describe',
    'What a target is and what its backend can do (capabilities, local root, guest), from the target string ' +
      'alone: no I/O, so it works for an unreachable target. BadTarget for a string that does not parse.',
    z.object({ target: Target }),
    TargetDescription,
  ),
  agentList: method(
    'agent.list',
    'The named agents kept in <stateDir>/config.json (`agentkeep agent add`), sorted by name, and which one is the ' +
      'default. A config.json that does not parse is an error (bad_state_dir naming the file and the field), never an ' +
      'empty list.',
    z.object({}),
    z.object({
      agents: z.array(NamedAgent),
      default: AgentName.optional().describe('The default agent, when one is set'),
      configFile: z.string().describe('Absolute path of the config.json they live in'),
    }),
  ),
  agentAdd: method(
    'agent.add',
    'Add a named agent: its target and stores (checked: they must parse; a local target must exist) and its ' +
      'settings, written to <stateDir>/config.json atomically, every other key kept. The first agent becomes the ' +
      'default. invalid_params when the name is taken (unless `replace`).',
    z.object({
      name: AgentName,
      target: Target,
      stores: z.array(Store).optional().describe('Stores to capture; absent: the Hermes homes found in the target'),
      failClosed: z.boolean().optional().describe('See AgentSettings.failClosed (default false)'),
      replace: z.boolean().optional().describe('Replace an agent of that name instead of refusing'),
    }),
    NamedAgent,
  ),
  agentRemove: method(
    'agent.remove',
    'Remove a named agent from <stateDir>/config.json (its restore points stay: they belong to the target). ' +
      'Removing the default agent leaves no default. agent_not_found naming the known agents.',
    z.object({ name: z.string().min(1, 'the agent name is empty').describe('The agent') }),
    z.object({
      removed: AgentName,
      default: AgentName.optional().describe('The default agent after the removal, if any'),
    }),
  ),
  agentSetDefault: method(
    'agent.setDefault',
    'Make a named agent the default one (used when a command names neither an agent nor a target). ' +
      'agent_not_found naming the known agents.',
    z.object({ name: z.string().min(1, 'the agent name is empty').describe('The agent') }),
    NamedAgent,
  ),
  agentSetSettings: method(
    'agent.setSettings',
    "Change a named agent's hook settings (failClosed, allowAgentRestores) in <stateDir>/config.json, every " +
      'other key kept; a setting not given keeps its value. agent_not_found naming the known agents.',
    z.object({
      name: z.string().min(1, 'the agent name is empty').describe('The agent'),
      failClosed: z.boolean().optional().describe('See AgentSettings.failClosed'),
      allowAgentRestores: z.boolean().optional().describe('See AgentSettings.allowAgentRestores'),
    }),
    NamedAgent,
  ),
  agentStatus: method(
    'agent.status',
    'Status of an agent: its target, whether it is reachable, restore point count and the newest one, and per ' +
      'store whether it exists and what in it is broken (one memory.list read and one history read per store, no ' +
      'lint).',
    z.object({ target: Target, stores: z.array(Store).optional() }),
    z.object({
      target: Target,
      backend: z.string(),
      description: TargetDescription.describe('The target as its backend describes it (same as target.describe)'),
      reachable: z.boolean(),
      message: z.string().optional().describe('Why it is not reachable'),
      restorePoints: z.number().int(),
      latest: RestorePoint.optional(),
      stores: z.array(
        z.object({
          store: Store,
          ok: z
            .boolean()
            .describe('The store exists and nothing in it is broken (false: see `message`, and `broken` when set)'),
          message: z
            .string()
            .optional()
            .describe(
              "Why the store cannot be read (missing, bad string), or when `broken`: the first part's message, e.g. " +
                '"/h/memories/MEMORY.md is a directory, not a file: …", led by "Nothing in this store can be read: " ' +
                'when nothing is, ending "(and 1 more)" for more parts',
            ),
          description: StoreDescription.optional().describe(
            'The store as its adapter describes it (absent when the string does not parse)',
          ),
          broken: BrokenStore.optional().describe(
            'Set when the store exists but a memory file or its history database is damaged or unreadable: which ' +
              'file, what, the fix, and whether the rest can be read. Never shown as empty or clean',
          ),
          configProblem: StoreProblem.extend({ file: z.string().describe('Absolute path of the config file') })
            .optional()
            .describe(
              "The store's own config file cannot be used (Hermes config.yaml does not parse, or is a directory): the " +
                'agent runs on its defaults, so the char limits shown are the defaults. The store stays `ok`. Absent when fine',
            ),
          pendingWrites: z
            .number()
            .int()
            .optional()
            .describe(
              'Writes the agent staged for approval and nobody approved or rejected yet (Hermes memory.write_approval: ' +
                'pending/memory/*.json; memory.list shows each one, MemoryFile.pending). Absent when none',
            ),
        }),
      ),
      interruptedRestore: z
        .object({
          id: z.string(),
          undo: z
            .string()
            .optional()
            .describe(
              'The pre-restore point: restore it to go back (absent for a restore without an undo point, noUndoPoint)',
            ),
          scope: Scope.describe('The scope of the interrupted restore: finish it with the same scope'),
          stores: z.array(Store).optional().describe('The stores it was given, if any'),
          startedAt: z.string(),
          actions: z
            .array(NextAction)
            .optional()
            .describe('Finish it (restore `id` again), or go back (restore `undo`)'),
        })
        .optional()
        .describe(
          'A restore that started writing the target and never finished (its process died): the target may be half-restored. Restore `id` again to finish it, or `undo` to go back',
        ),
      hookWarnings: z
        .array(HookWarning)
        .optional()
        .describe(
          "Restore points an agent hook could not take around the agent's own tool calls (newest first, last 7 days, at most 20); absent when none",
        ),
      pendingRequests: z
        .number()
        .int()
        .optional()
        .describe('Restore requests of the agent waiting for approval (request.list); absent when none'),
      pendingWriteBack: PendingWriteBack.optional().describe(
        'A VM rollback (scope machine) whose captured agent state could not be written back into the guest yet; ' +
          'its action writes it back. Absent when none',
      ),
      damagedRestorePoints: z
        .array(
          z.object({
            id: z.string(),
            message: z
              .string()
              .describe('What is wrong with its journal entry, e.g. "… is damaged: Unexpected end of JSON input."'),
            actions: z.array(NextAction).describe('Delete the damaged restore point'),
          }),
        )
        .optional()
        .describe(
          'Journal entries that cannot be read (not JSON, wrong shape): restorePoint.list leaves them out so they do not hide the others, and this says they exist; absent when none',
        ),
      version: z.string().describe('Sidecar version'),
    }),
  ),
  memoryRecordWrite: method(
    'memory.recordWrite',
    "Record one write of the agent's own memory tool (an agent hook around Hermes' `memory` tool call) in the store's write log (<stateDir>/memory-backups/<store key>/writes.jsonl, source \"hook\"): the memory file's content before and after, the action, target, session and tool call id. Append-only; nothing in the store is changed.",
    z.object({
      store: Store,
      file: z.string().describe('Absolute path of the memory file the tool wrote (MEMORY.md, USER.md)'),
      action: z.enum(['add', 'replace', 'remove']).describe("The memory tool's action"),
      target: z.string().optional().describe("The memory tool's target: memory | user"),
      content: z.string().optional().describe("The tool's content argument"),
      oldText: z.string().optional().describe("The tool's old_text argument (replace, remove)"),
      before: z.string().describe('The file content before the tool ran ("" when it did not exist)'),
      after: z.string().describe('The file content after the tool ran'),
      agent: z.string().optional(),
      session: z.string().optional(),
      toolCallId: z.string().optional(),
      tool: z.string().optional().describe('The tool name (memory)'),
    }),
    z.object({
      log: z.string().describe('Path of the write log the record was appended to'),
      changed: z.boolean().describe('Whether the file content differs before and after'),
    }),
  ),
  requestCreate: method(
    'request.create',
    'Store a restore request of the agent (MCP restore_request). It never restores by itself: it waits in request.list until a person approves or denies it, unless the agent setting allowAgentRestores lets a scope-agent request run at once (off by default).',
    z.object({
      target: Target,
      stores: z.array(Store).optional(),
      restorePoint: z.string().min(1),
      scope: Scope,
      reason: z.string().trim().min(1, 'the reason is empty: say why the restore is needed'),
      agent: z.string().optional(),
      session: z.string().optional(),
      allowAgentRestores: z
        .boolean()
        .optional()
        .describe('The agent may restore scope agent without approval (from its settings)'),
    }),
    RestoreRequest,
  ),
  requestList: method(
    'request.list',
    'Restore requests, newest first (all targets, or one).',
    z.object({ target: Target.optional(), status: z.enum(['pending', 'approved', 'denied', 'failed']).optional() }),
    z.array(RestoreRequest),
  ),
  requestApprove: method(
    'request.approve',
    "Approve a pending restore request: runs restorePoint.restore with the request's target, restore point, scope and stores (with its pre-restore point). The client confirms with the person first (the CLI: --yes or a TTY prompt). Errors: invalid_params for a request that is not pending.",
    z.object({ id: z.string().min(1) }),
    z.object({ request: RestoreRequest, restore: z.object({ undo: z.string(), changes: ChangeSummary }).optional() }),
  ),
  requestDeny: method(
    'request.deny',
    'Deny a pending restore request; nothing is restored.',
    z.object({ id: z.string().min(1), note: z.string().optional() }),
    RestoreRequest,
  ),
  riskScan: method(
    'risk.scan',
    'Find risky commands in a text (pure; no I/O). Lines are 1-based.',
    z.object({ file: z.string().describe('File name or path (used to pick the file kind)'), text: z.string() }),
    z.array(
      z.object({
        file: z.string(),
        line: z.number().int().positive(),
        endLine: z.number().int().positive(),
        command: z.string(),
        class: RiskClassSchema,
        kind: z
          .string()
          .optional()
          .describe(
            'File kind the scanner read the file as: shell | markdown | powershell | dockerfile | makefile | justfile | compose | workflow | notebook | notebook-cell | package-json | devcontainer | vscode-tasks',
          ),
        risk: z
          .string()
          .optional()
          .describe('Reason text naming the risky part(s) of the command and what they change'),
        reason: z
          .string()
          .optional()
          .describe(
            'One line: why the highest part is risky, e.g. "destructive: git reset --hard discards uncommitted changes"',
          ),
      }),
    ),
  ),
} as const;

// ---------------------------------------------------------------------------------------------
// Notifications (sidecar -> client)
// ---------------------------------------------------------------------------------------------

export const Notifications = {
  progress: {
    method: METHOD_PREFIX + 'progress',
    description: 'Progress of a long operation started with a progressToken.',
    params: z.object({
      token: z.string(),
      stage: z.string().describe('scan | store | capture | restore | done'),
      message: z.string(),
      done: z.number().int().optional().describe('Units done (files)'),
      total: z.number().int().optional().describe('Units total (files), when known'),
    }),
  },
  changed: {
    method: METHOD_PREFIX + 'changed',
    description:
      'Restore points or memory of a target changed; clients refresh their views. Sent to every connected client after each create, restore, delete, keep, label and prune that deleted something (what: restorePoints), after a restore that put agent state back and each memory edit, remove and add (what: memory).',
    params: z.object({
      target: Target.optional(),
      what: z.enum(['restorePoints', 'memory']),
    }),
  },
} as const;

export type MethodName = keyof typeof Methods;
export type ParamsOf<K extends MethodName> = z.input<(typeof Methods)[K]['params']>;
export type ResultOf<K extends MethodName> = z.infer<(typeof Methods)[K]['result']>;
export type ProgressParams = z.infer<typeof Notifications.progress.params>;
export type ChangedParams = z.infer<typeof Notifications.changed.params>;
export type RiskFinding = ResultOf<'riskScan'>[number];

/**
 * A NextAction that runs protocol method `key` with `params` (typed by the method's params).
 * @param opts.destructive the action replaces or deletes state (front ends confirm first)
 */
export function nextAction<K extends MethodName>(
  title: string,
  key: K,
  params: ParamsOf<K>,
  opts: { destructive?: boolean } = {},
): NextAction {
  const a: NextAction = { title, method: Methods[key].method, params: params as Record<string, unknown> };
  return opts.destructive ? { ...a, destructive: true } : a;
}

/** The protocol key of a wire method name (`agentkeep/restorePoint.list` -> `restorePointList`), or undefined. */
export function methodKey(wire: string): MethodName | undefined {
  return (Object.keys(Methods) as MethodName[]).find((k) => Methods[k].method === wire);
}

/**
 * The whole protocol as one JSON Schema document (draft 2020-12): `methods.<wire name>` with
 * `params`/`result`, `notifications.<wire name>` with `params`, `errors` (code table) and `errorData`
 * (the JSON-RPC `error.data` shape, with its next actions).
 */
export function protocolJsonSchema(): Record<string, unknown> {
  const methods: Record<string, unknown> = {};
  for (const def of Object.values(Methods)) {
    methods[def.method] = {
      description: def.description,
      params: z.toJSONSchema(def.params, { io: 'input' }),
      result: z.toJSONSchema(def.result),
    };
  }
  const notifications: Record<string, unknown> = {};
  for (const def of Object.values(Notifications)) {
    notifications[def.method] = { description: def.description, params: z.toJSONSchema(def.params) };
  }
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'AgentKeep sidecar protocol (JSON-RPC 2.0)',
    methodPrefix: METHOD_PREFIX,
    methods,
    notifications,
    errors: Object.values(ErrorCodes),
    errorData: z.toJSONSchema(ErrorData),
  };
}
