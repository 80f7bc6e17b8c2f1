/**
 * How the Agent tree shows the agent row of a target that is not a hypervisor guest (no `vscode`
 * import, unit-tested on Node): from agent.status and the target's description (TargetDescription:
 * target.describe, agent.status `description`), never from the target string or its scheme. A new
 * backend's targets show its name, backend and capabilities here with no edit of the extension.
 */
import type { ResultOf, TargetDescription } from '../sidecar/protocol';
import { targetCapabilityLabels } from '../sidecar/protocol/targets';
import { formatAge, formatBytes, targetName, usageText } from './format';

/** The text parts of the agent row. */
export interface AgentItemView {
  /** The backend's display name of the target (target.describe `name`), else the target string. */
  label: string;
  /**
   * "reachable · dir · 12 MiB of 10 GiB", with "memory broken · " first when agent.status reports a
   * store broken, and "restore interrupted · " first when one never finished.
   */
  description: string;
  /** Codicon id: warning (interrupted restore, a broken store, near or over the size cap), vm-active, vm-outline. */
  icon: string;
  /** Markdown (theme icons on): target, backend and reachability, capabilities, restore points, disk use, stores. */
  tooltip: string;
}

/**
 * The agent row of a target.
 * @param d the target's description (agent.status `description`); undefined: capabilities unknown
 * @param u disk use of its restore points (restorePoint.usage), when known
 */
export function agentItemView(
  target: string,
  d: TargetDescription | undefined,
  s: ResultOf<'agentStatus'>,
  u?: ResultOf<'restorePointUsage'>,
): AgentItemView {
  const backend = d?.backend ?? s.backend;
  let description = `${s.reachable ? 'reachable' : 'unreachable'} · ${backend}${u ? ` · ${usageText(u)}` : ''}`;
  const broken = s.stores.some((st) => st.broken);
  if (broken) description = `memory broken · ${description}`;
  const warn = !!s.interruptedRestore || !!s.pendingWriteBack || (!!u && u.level !== 'ok') || broken;
  const md: string[] = [`**Target** \`${target}\``];
  const ir = s.interruptedRestore;
  if (ir) {
    description = `restore interrupted · ${description}`;
    md.push(
      `$(warning) **A restore of ${ir.id} (scope ${ir.scope}) never finished** (started ${formatAge(ir.startedAt)}): ` +
        `the target may be half-restored. Restore ${ir.id} again with scope ${ir.scope} to finish it` +
        (ir.undo ? `, or restore ${ir.undo} to go back.` : ' (it had no undo point).'),
    );
  }
  const wb = s.pendingWriteBack;
  if (wb) {
    description = `memory not written back · ${description}`;
    md.push(
      `$(warning) **The agent's memory from before the rollback to ${wb.id} was not written back into the guest** ` +
        `(${wb.message}). It is kept in ${wb.undo}: restore it with scope agent to write it back.`,
    );
  }
  md.push(`Backend: ${backend} · ${s.reachable ? 'reachable' : `not reachable: ${s.message ?? ''}`}`);
  if (d) {
    const { can, cannot } = targetCapabilityLabels(d.capabilities);
    md.push(`Can: ${can.join(', ')}${cannot.length ? ` · not: ${cannot.join(', ')}` : ''}`);
  }
  md.push(`Restore points: ${s.restorePoints}`);
  if (u) {
    const level =
      u.level === 'over'
        ? ' — **over the cap**: prune some restore points'
        : u.level === 'near'
          ? ' — near the cap'
          : '';
    md.push(`Disk use: ${formatBytes(u.bytes)} of the ${formatBytes(u.capBytes)} cap${level}`);
  }
  for (const st of s.stores) {
    const state = st.ok ? 'ok' : `${st.broken ? '$(warning) broken: ' : ''}${st.message ?? 'not ok'}`;
    md.push(`Store \`${st.store}\`: ${state}`);
  }
  md.push(`Sidecar ${s.version}`);
  return {
    label: targetName(target, d),
    description,
    icon: warn ? 'warning' : s.reachable ? 'vm-active' : 'vm-outline',
    tooltip: md.join('\n\n'),
  };
}
