/**
 * Proxmox VE and VM helpers of the extension that need no VS Code API (unit-tested in
 * test/unit/extension-proxmox.test.ts): token format, guests from agent.discover, lock explanations,
 * the snapshot tree (restore points nested by Proxmox `parent`), where "you are here" is, and the
 * wording of VM rollbacks. What a target is comes from the sidecar (target.describe: `kind`,
 * `capabilities`, `guest`); nothing here reads a target string.
 */
import type {
  RestoreEffects,
  RestorePoint,
  ResultOf,
  Scope,
  TargetDescription,
  TargetGuest,
} from '../sidecar/protocol';
import { formatAge } from './format';

/** A guest as agent.discover reports it. */
export type Guest = ResultOf<'agentDiscover'>[number];
/** A named agent of the sidecar's state dir (agent.list). */
export type NamedAgentInfo = ResultOf<'agentList'>['agents'][number];

/** One row of "Choose Agent": a named agent (target + stores) or a discovered guest (target only). */
export interface AgentPick {
  label: string;
  description: string;
  detail?: string;
  target: string;
  /** Set for a named agent: agentkeep.stores becomes these ([] = the stores found in the target). */
  stores?: string[];
}

/**
 * The rows of "Choose Agent": the named agents first (agentkeep agent add; the default one marked),
 * then the guests discovered on the Proxmox host. `current` (agentkeep.target) is marked.
 */
export function agentPicks(named: readonly NamedAgentInfo[], guests: readonly Guest[], current?: string): AgentPick[] {
  const cur = (t: string): string => (t === current ? ' · current' : '');
  return [
    ...named.map((a) => ({
      label: `$(person) ${a.name}`,
      description: `${a.target}${a.default ? ' · default agent' : ''}${cur(a.target)}`,
      detail: a.stores?.length ? `stores: ${a.stores.join(', ')}` : 'stores: the ones found in the target',
      target: a.target,
      stores: a.stores ?? [],
    })),
    ...guests.map((g) => ({
      label: `$(${g.type === 'lxc' ? 'package' : 'vm'}) ${g.name ?? `${g.type} ${g.vmid}`}`,
      description: `${g.vmid} · ${g.node} · ${g.status}${g.lock ? ` · locked (${g.lock})` : ''}${cur(g.target)}`,
      detail: g.tags.length ? `tags: ${g.tags.join(', ')}` : undefined,
      target: g.target,
    })),
  ];
}

/**
 * Why `token` is not a Proxmox API token in the form `USER@REALM!TOKENID=SECRET` (e.g.
 * `agent@pve!agentkeep=1b6f…`), or undefined when it is. Never echoes the secret.
 */
export function checkTokenFormat(token: string): string | undefined {
  const t = token.trim();
  if (!t) return 'Enter the token as USER@REALM!TOKENID=SECRET.';
  const eq = t.indexOf('=');
  if (eq < 0)
    return 'The "=SECRET" part is missing: write USER@REALM!TOKENID=SECRET (the secret is shown once, when the token is created).';
  const id = t.slice(0, eq);
  if (!/^[^\s@!=]+@[^\s@!=]+$/.test(id.split('!')[0] ?? ''))
    return 'The token must start with the user and realm, e.g. agent@pve!agentkeep=SECRET.';
  if (!/^[^\s@!=]+@[^\s@!=]+![A-Za-z][A-Za-z0-9._-]*$/.test(id))
    return 'The token id is missing: write USER@REALM!TOKENID=SECRET, e.g. agent@pve!agentkeep=SECRET.';
  if (!/^\S+$/.test(t.slice(eq + 1))) return 'The secret after "=" is empty or has spaces.';
  return undefined;
}

/** The non-secret part of a token (`USER@REALM!TOKENID`), for messages. */
export function tokenId(token: string): string {
  return token.split('=')[0] ?? '';
}

/** Whether the target is a VM or container (not a directory): rollbacks replace what runs, there is no file list. */
export function isVmTarget(d: Pick<TargetDescription, 'kind'>): boolean {
  return d.kind !== 'directory';
}

/** Whether restore points of this target can hold RAM state on request (Proxmox qemu guests). */
export function canRamState(d: Pick<TargetDescription, 'capabilities'>): boolean {
  return d.capabilities.ramStateOnRequest;
}

/** `proxmox://HOST:PORT` from the agentkeep.proxmox.host/port settings (for agent.discover). */
export function hostOf(p: Pick<TargetGuest, 'host' | 'port'>): string {
  return `proxmox://${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}`;
}

/** `HOST:PORT` of a guest's hypervisor, for labels (IPv6 in brackets). */
export function hostLabel(p: Pick<TargetGuest, 'host' | 'port'>): string {
  return `${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}`;
}

/** The guest a target names (same vmid; same node unless the target says `-`). */
export function findGuest(guests: readonly Guest[], p: TargetGuest): Guest | undefined {
  return guests.find((g) => g.vmid === p.vmid && (p.node === '-' || g.node === p.node));
}

/** Guests carrying `tag` (every guest when tag is empty). */
export function withTag(guests: readonly Guest[], tag: string): Guest[] {
  return tag ? guests.filter((g) => g.tags.includes(tag)) : [...guests];
}

/** What a Proxmox `lock` means and what to do, in one sentence. */
export function explainLock(lock: string, p?: Pick<TargetGuest, 'type' | 'vmid'>): string {
  const tool = p?.type === 'lxc' ? 'pct' : 'qm';
  const id = p?.vmid ?? 'VMID';
  switch (lock) {
    case 'backup':
      return 'A backup (vzdump) is running: wait for it to finish before taking or restoring a snapshot.';
    case 'snapshot':
      return `A snapshot is being taken. If no snapshot task runs any more, the lock is stale: clear it on the host with \`${tool} unlock ${id}\`.`;
    case 'snapshot-delete':
      return `A snapshot delete is running or got stuck. If no task runs, check the snapshot list, then clear it on the host with \`${tool} unlock ${id}\`.`;
    case 'rollback':
      return 'A rollback is running.';
    case 'migrate':
      return 'The guest is being migrated to another node.';
    case 'suspended':
    case 'suspending':
      return 'The guest is hibernated (suspended to disk): resume it first.';
    default:
      return `Proxmox lock "${lock}": another operation holds the guest. AgentKeep never unlocks it by itself (\`${tool} unlock ${id}\` on the host when you are sure nothing runs).`;
  }
}

/** The name a restore point has on the hypervisor (its `snapname`, else its id). */
export function snapnameOf(rp: RestorePoint): string {
  return rp.machine.snapname ?? rp.id;
}

/**
 * The restore point the guest runs on now (Proxmox's `current` has it as `parent`), inferred from the
 * journal: after a rollback the newest restore point is the pre-restore capture and the guest sits
 * on the restored one; otherwise it sits on the newest restore point. Undefined when there is none.
 * @param rps restore points of one target, any order
 */
export function currentRestorePoint(rps: readonly RestorePoint[]): RestorePoint | undefined {
  const live = rps.filter((r) => r.status !== 'failed');
  const newest = [...live].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt))[0];
  if (newest?.kind === 'pre-restore' && newest.restoredFrom) {
    const restored = live.find((r) => r.id === newest.restoredFrom);
    if (restored?.status === 'rolled-back') return restored;
  }
  return newest;
}

/**
 * The snapshot tree: children of each restore point by Proxmox `parent` (key: parent restore point
 * id; key undefined = roots, i.e. no parent or a parent AgentKeep did not make), each list oldest
 * first (by snaptime = createdAt), as the Proxmox Snapshots tab shows it.
 */
export function snapshotTree(rps: readonly RestorePoint[]): Map<string | undefined, RestorePoint[]> {
  const bySnap = new Map(rps.map((r) => [snapnameOf(r), r]));
  const tree = new Map<string | undefined, RestorePoint[]>();
  const sorted = [...rps].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
  for (const rp of sorted) {
    const parent = rp.machine.parent ? bySnap.get(rp.machine.parent) : undefined;
    const key = parent && parent !== rp ? parent.id : undefined;
    const list = tree.get(key) ?? [];
    list.push(rp);
    tree.set(key, list);
  }
  return tree;
}

/** The message after a cancelled wait (a notification: plain text): the task goes on where it runs, and how to watch it. */
export function continuesMessage(d: Pick<TargetDescription, 'guest'> | undefined, what: string): string {
  const p = d?.guest;
  if (p) {
    const node = p.node === '-' ? 'NODE' : p.node;
    return `Stopped waiting for ${what}. The Proxmox task continues on ${p.host}: watch it under Tasks in the Proxmox web UI (node ${node}, VMID ${p.vmid}) or with "pvesh get /nodes/${node}/tasks --vmid ${p.vmid}" on the host. The Agent view updates when it ends.`;
  }
  return `Stopped waiting for ${what}. It continues in the AgentKeep sidecar; the Agent view updates when it ends.`;
}

/** Button of the VM rollback confirmation. */
export const ROLLBACK = 'Roll back';
/** Button of the VM rollback confirmation when the snapshot has no RAM state (restore param `start`). */
export const ROLLBACK_AND_START = 'Roll back and start VM';

/** "container" for a container target, else "VM". */
export function guestWord(d: Pick<TargetDescription, 'kind'>): string {
  return d.kind === 'container' ? 'container' : 'VM';
}

/** Question of the rollback confirmation of a VM target. */
export function vmRollbackQuestion(d: TargetDescription, rp: RestorePoint, scope: Scope): string {
  const p = d.guest;
  const what = p ? `${guestWord(d)} ${p.vmid}` : 'the VM';
  return `Roll back ${what} to "${rp.label}" (${formatAge(rp.createdAt)})${scope === 'both' ? ', machine + agent state' : ''}?`;
}

/**
 * Detail of that confirmation, from restorePoint.preview `effects` (what the sidecar says the
 * rollback does to the guest): hard stop or QEMU loadvm, RAM state or the start choice, the outside
 * world, undo.
 */
export function vmRollbackDetail(d: TargetDescription, e: RestoreEffects): string {
  const vm = guestWord(d);
  const lines = e.stopsGuest
    ? [
        `If the ${vm} is running it is hard-stopped (no clean shutdown: unsaved work in it is lost), then its disks go back to the snapshot.`,
      ]
    : [
        "The VM's disks and RAM go back to the snapshot (QEMU loadvm): what runs in it now is replaced, and unsaved work in it is lost.",
      ];
  const unless = e.canStartAfter ? ` unless you choose "${ROLLBACK_AND_START}"` : '';
  lines.push(
    e.resumesRam
      ? `The snapshot has RAM state: the ${vm} resumes running where it was when the snapshot was taken.`
      : `The snapshot has no RAM state: the ${vm} stays stopped after the rollback${unless}.`,
  );
  lines.push(
    'Snapshots do not undo the outside world: messages and emails sent, API calls, payments, git pushes and changes on other machines stay done.',
  );
  lines.push('The current state is captured first (a restore point), so this rollback can be undone.');
  return lines.join('\n\n');
}

/** Buttons of that confirmation: start afterwards is offered when the preview says it can (no RAM state). */
export function vmRollbackButtons(e: Pick<RestoreEffects, 'canStartAfter'>): string[] {
  return e.canStartAfter ? [ROLLBACK, ROLLBACK_AND_START] : [ROLLBACK];
}

/**
 * What a VM rollback left: the guest state (running / stopped) in words, plus the sidecar's other
 * warnings (its own "is <state> after the rollback" sentence, written for the CLI's --start, is
 * replaced by ours, which names the VS Code choice).
 */
export function vmRestoreOutcome(
  d: TargetDescription,
  rp: RestorePoint,
  res: Pick<ResultOf<'restorePointRestore'>, 'machineState' | 'warnings'>,
): string {
  const vm = guestWord(d);
  const p = d.guest;
  const parts = [`Rolled back to "${rp.label}".`];
  if (!d.capabilities.rollbackStopsGuest && res.machineState) {
    parts.push(`The VM's disks and RAM are back at the restore point; it is ${res.machineState}.`); // qemu: (QMP loadvm)
  } else if (res.machineState === 'stopped') {
    const how = p
      ? ` Start it in Proxmox or with "${p.type === 'lxc' ? 'pct' : 'qm'} start ${p.vmid}" on the node`
      : ' Start it';
    parts.push(
      `The ${vm} is stopped: ${rp.machine.vmstate ? 'its RAM state did not resume' : 'the snapshot has no RAM state'}.${how}, or choose "${ROLLBACK_AND_START}" next time.`,
    );
  } else if (res.machineState) {
    parts.push(`The ${vm} is ${res.machineState}.`);
  }
  const own = res.machineState ? ` is ${res.machineState} after the rollback` : undefined;
  for (const w of res.warnings ?? []) {
    if ((own && w.includes(own)) || parts.some((x) => x.includes(w))) continue;
    parts.push(/[.!)]$/.test(w) ? w : `${w}.`);
  }
  return parts.join(' ');
}

/** What agent.memoryReach says about an agent's memory. */
export type MemoryReach = ResultOf<'agentMemoryReach'>;

/**
 * How the Agents list words whether a guest's memory is reachable: a short part for the row's
 * description ("memory via guest agent", "memory over SSH", "memory not reachable") and a line for
 * the tooltip with the stores, how they are reached, or the reason and the fix.
 */
export function reachText(r: MemoryReach | undefined): { short: string; detail: string } {
  if (!r) return { short: '', detail: '' };
  if (!r.reachable)
    return {
      short: 'memory not reachable',
      detail: `Memory not reachable: ${r.reason ?? 'no store can be read'}${r.hint ? ` Fix: ${r.hint}` : ''}`,
    };
  const short: Record<string, string> = {
    'guest-agent': 'memory via guest agent',
    ssh: 'memory over SSH',
    local: 'memory on this machine',
  };
  const n = r.stores.filter((s) => s.reachable).length;
  const names = r.stores
    .filter((s) => s.reachable)
    .map((s) => s.description?.name ?? s.store)
    .join(', ');
  return {
    short: short[r.via] ?? 'memory reachable',
    detail: `Memory: ${n} store${n === 1 ? '' : 's'} (${names}) ${r.how}${r.found ? ', found by probing the guest' : ''}.`,
  };
}
