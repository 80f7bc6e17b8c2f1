/**
 * How a restore point row of the Agent view reads (pure, unit-tested on Node): its codicon and its
 * description, from the restore point, who took it (extension/origin.ts) and whether it is a pre
 * without its post.
 */
import type { RestorePoint } from '../sidecar/protocol';
import { formatAge, shortReason } from './format';
import { originView, PRE_WITHOUT_POST } from './origin';

/** The codicon of a restore point by its status and kind alone. */
export function rpIcon(rp: RestorePoint): string {
  if (rp.status === 'failed') return 'error';
  if (rp.status === 'kept') return 'pass';
  if (rp.status === 'rolled-back') return 'discard';
  if (rp.kind === 'pre-restore') return 'debug-step-back';
  return 'history';
}

/**
 * The icon and description of a restore point row: failed first, then a pre without its post
 * (warning), RAM state (chip), who took it (ORIGIN_ICONS: an agent hook, the agent, agentkeep run,
 * apt), else its status. The description: RAM, important, kept/rolled back when the icon shows the
 * origin, the age, the pre-without-post flag, the reason (the origin sentence for the agent's own).
 */
export function rpItemView(
  rp: RestorePoint,
  withoutPost: boolean,
  now: number = Date.now(),
): { icon: string; description: string } {
  const origin = originView(rp);
  const live = rp.status === 'ready' || rp.status === 'kept';
  const icon =
    rp.status === 'failed'
      ? 'error'
      : withoutPost
        ? 'warning'
        : rp.machine.vmstate && live
          ? 'chip'
          : origin
            ? origin.icon
            : rpIcon(rp);
  const status = origin && icon === origin.icon && rp.status !== 'ready' ? rp.status.replace('-', ' ') : '';
  const description = [
    rp.machine.vmstate ? 'RAM' : '',
    rp.important ? '★ important' : '',
    status,
    formatAge(rp.createdAt, now),
    withoutPost ? PRE_WITHOUT_POST : '',
    shortReason(rp),
  ]
    .filter(Boolean)
    .join(' · ');
  return { icon, description };
}
