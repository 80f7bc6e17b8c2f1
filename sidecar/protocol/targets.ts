/**
 * How a target's description reads for people, shared by the CLI (`agentkeep target describe`) and
 * the extension (the Agent view's agent row) (no I/O, no Node or VS Code imports): the capability
 * names and a one-line summary. Input shapes come from TargetDescription in ./index.ts
 * (target.describe, agent.status `description`), never from a target string.
 */
import type { TargetCapabilities, TargetDescription } from './index';

/** The yes/no capabilities, in the order they are listed, with their labels. */
export const TARGET_CAPABILITY_LABELS: Readonly<
  Record<Exclude<keyof TargetCapabilities, 'speedClass' | 'guestWriteMaxBytes' | 'ramStateOnRequest'>, string>
> = {
  ramState: 'RAM state',
  diff: 'diff',
  compare: 'compare',
  readFile: 'read files',
  relabel: 'relabel',
  guestAccess: 'guest files',
  discover: 'agent discovery',
  startAfterRollback: 'start after rollback',
  rollbackStopsGuest: 'rollback stops the guest',
  canRunWhileRunning: 'snapshot while running',
};

/**
 * What a target can and cannot do, as labels: `can` in the order of TARGET_CAPABILITY_LABELS ("RAM
 * state on request" when the snapshot chooses), then the speed ("slow snapshots"); `cannot` lists
 * the file-level and RAM capabilities it lacks (diff, compare, read files, RAM state), which the
 * front ends offer or hide.
 */
export function targetCapabilityLabels(c: TargetCapabilities): { can: string[]; cannot: string[] } {
  const keys = Object.keys(TARGET_CAPABILITY_LABELS) as Array<keyof typeof TARGET_CAPABILITY_LABELS>;
  const label = (k: keyof typeof TARGET_CAPABILITY_LABELS): string =>
    k === 'ramState' && c.ramStateOnRequest ? 'RAM state on request' : TARGET_CAPABILITY_LABELS[k];
  const can = keys.filter((k) => c[k]).map(label);
  can.push(`${c.speedClass} snapshots`);
  const cannot = (['ramState', 'diff', 'compare', 'readFile'] as const).filter((k) => !c[k]).map(label);
  return { can, cannot };
}

/**
 * One line about a target: "box (toy vm, no local files): RAM state on request, read files, ...;
 * no diff, compare" or "agent (dir directory at /srv/agent): diff, compare, ...".
 */
export function targetSummary(d: TargetDescription): string {
  const where = d.localRoot ? ` at ${d.localRoot}` : ', no local files';
  const { can, cannot } = targetCapabilityLabels(d.capabilities);
  return `${d.name} (${d.backend} ${d.kind}${where}): ${can.join(', ')}${cannot.length ? `; no ${cannot.join(', ')}` : ''}`;
}
