/**
 * What AgentKeep writes into and reads from Proxmox: snapshot names, snapshot descriptions with a
 * machine-readable marker, and the plain-language meaning of a guest `lock`.
 */
import { AgentKeepError } from '../../core/errors';
import type { SnapshotMeta } from '../types';

/** pve-configid (pve-common JSONSchema.pm `$CONFIGID_RE`, anchored) as we generate it: no `-`, letter first. */
export const SNAPNAME_RE = /^[A-Za-z][A-Za-z0-9_]+$/;
/** pve-snapshot-name maxLength. */
export const SNAPNAME_MAX = 40;
/** Refused by qemu (`current`, `pending`, case-insensitive) and lxc (`current`, `vzdump`). */
export const RESERVED_SNAPNAMES = ['current', 'pending', 'vzdump'];

/**
 * Check a snapname before sending it (Proxmox would answer 400 or a 500 "reserved name").
 * @throws AgentKeepError InvalidParams naming the rule.
 */
export function checkSnapname(name: string): void {
  const bad = (why: string): never => {
    throw new AgentKeepError(
      'InvalidParams',
      `"${name}" cannot be a Proxmox snapshot name: ${why}.`,
      'Use a letter, then letters, digits or _ (at most 40 characters), not current/pending/vzdump.',
    );
  };
  if (name.length > SNAPNAME_MAX) bad(`it has ${name.length} characters (at most ${SNAPNAME_MAX})`);
  if (!SNAPNAME_RE.test(name))
    bad('it must start with a letter and hold only letters, digits and _ (at least 2 characters)');
  if (RESERVED_SNAPNAMES.includes(name.toLowerCase())) bad('the name is reserved by Proxmox');
}

/** The marker AgentKeep puts on the last line of a snapshot description. */
export const MARKER_PREFIX = 'agentkeep:v1:';

/** What the marker holds: enough to list the restore point from Proxmox alone. */
export interface SnapshotMarker {
  /** Restore point id. */
  id: string;
  kind: SnapshotMeta['kind'];
  label: string;
  /** ISO 8601 UTC. */
  createdAt: string;
  pairOf?: string;
  important?: boolean;
}

/**
 * The description of a snapshot: the label, then the reason (command and file:line, or free text),
 * then `agentkeep:v1:<base64url(JSON SnapshotMarker)>`. Stays under 2 KiB: the label is cut at 200 characters, the reason at 1000.
 */
export function describeSnapshot(id: string, meta: SnapshotMeta): string {
  const short = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
  const marker: SnapshotMarker = {
    id,
    kind: meta.kind,
    label: short(meta.label, 200),
    createdAt: meta.createdAt,
    ...(meta.pairOf ? { pairOf: meta.pairOf } : {}),
    ...(meta.important ? { important: true } : {}),
  };
  const r = meta.reason;
  const where = r?.file ? `${r.file}${r.line ? `:${r.line}` : ''}` : '';
  const reason = r
    ? [r.command ? `before: ${r.command}` : '', where ? `(${where})` : '', r.text ?? ''].filter(Boolean).join(' ')
    : '';
  const line = `${MARKER_PREFIX}${Buffer.from(JSON.stringify(marker), 'utf8').toString('base64url')}`;
  return [
    short(meta.label.replace(/\s*\n\s*/g, ' '), 200),
    reason ? short(reason.replace(/\s*\n\s*/g, ' '), 1000) : '',
    line,
  ]
    .filter(Boolean)
    .join('\n');
}

/** The marker of a description, or undefined when the snapshot was not made by AgentKeep (or the marker is damaged). */
export function parseMarker(description: string | undefined): SnapshotMarker | undefined {
  if (!description) return undefined;
  const line = description
    .split(/\r?\n/)
    .map((l) => l.trim())
    .reverse()
    .find((l) => l.startsWith(MARKER_PREFIX));
  if (!line) return undefined;
  try {
    const m = JSON.parse(Buffer.from(line.slice(MARKER_PREFIX.length), 'base64url').toString('utf8')) as SnapshotMarker;
    if (typeof m.id !== 'string' || typeof m.createdAt !== 'string' || typeof m.kind !== 'string') return undefined;
    return { ...m, label: typeof m.label === 'string' ? m.label : m.id };
  } catch {
    return undefined;
  }
}

/**
 * Replace the human part of a description (when `text` is given) and update AgentKeep's marker line
 * to match: its label, and its important flag when `important` is given, so that another machine that
 * finds the restore point from Proxmox alone sees the rename and the mark too.
 */
export function relabel(description: string, text: string | undefined, important?: boolean): string {
  const lines = description.split(/\r?\n/);
  const at = lines.findIndex((l) => l.trim().startsWith(MARKER_PREFIX));
  const human =
    text !== undefined
      ? text.trim().replace(/\s*\n\s*/g, ' ')
      : lines
          .filter((_, i) => i !== at)
          .join('\n')
          .trim();
  const m = parseMarker(description);
  if (at < 0 || !m) return human;
  const next: SnapshotMarker = { ...m, ...(text !== undefined ? { label: text.trim().slice(0, 200) } : {}) };
  if (important === true) next.important = true;
  if (important === false) delete next.important;
  return [human, `${MARKER_PREFIX}${Buffer.from(JSON.stringify(next), 'utf8').toString('base64url')}`]
    .filter(Boolean)
    .join('\n');
}

/**
 * The error for a locked guest, saying what the lock means and how the user clears it. AgentKeep
 * never unlocks by itself (qm.adoc "Locks").
 */
export function lockedError(lock: string, type: 'qemu' | 'lxc', vmid: number, what: string): AgentKeepError {
  const tool = type === 'qemu' ? 'qm' : 'pct';
  const T = type === 'qemu' ? 'VM' : 'CT';
  const unlock = `If no task of ${T} ${vmid} is running (node > Task History), clear the lock on the node with \`${tool} unlock ${vmid}\`; AgentKeep never unlocks by itself.`;
  const meaning: Record<string, string> = {
    backup: `a backup (vzdump) of it is running. Wait until the backup task ends, then try again.`,
    snapshot: `a snapshot is being taken, or a snapshot task died half-way. Wait for it; ${unlock}`,
    'snapshot-delete': `a snapshot delete failed half-way (the snapshot is left in state "delete"). ${unlock} Then delete that snapshot with force (\`${tool} delsnapshot ${vmid} NAME --force\`).`,
    rollback: `a rollback is running or failed half-way. ${unlock}`,
    migrate: `it is being migrated to another node. Wait until the migration ends.`,
    clone: `it is being cloned. Wait until the clone task ends.`,
    create: `it is still being created or restored. Wait until that task ends.`,
    suspended: `it is hibernated (suspended to disk). Resume it in Proxmox (Start) first.`,
    suspending: `it is being hibernated. Wait, then resume it in Proxmox first.`,
    mounted: `its volumes are mounted on the host (\`pct mount\`). Run \`pct unmount ${vmid}\` first.`,
  };
  return new AgentKeepError(
    'GuestLocked',
    `Cannot ${what}: ${T} ${vmid} is locked (${lock}).`,
    meaning[lock] ?? `Find the task that holds the lock in node > Task History. ${unlock}`,
  );
}
