/**
 * Which risky config files belong to the configured agent (no `vscode` import, unit-tested on Node):
 * the scoping of the config-file lens and prompt (extension/configFiles.ts).
 */
import type { TargetDescription } from '../sidecar/protocol';
import { pathInside, riskyConfigInScope, type RiskyConfig } from '../sidecar/protocol/configFiles';
import { storeLocalRoot, type StoreRef } from './format';

/** Whether `file` is inside `dir` (or is it). */
export const inside = pathInside;

/**
 * Why a file is a risky config file of the configured agent, or undefined: riskyConfigInScope
 * (sidecar/protocol/configFiles.ts) with the stores' local roots (StoreDescription.localRoot; a store
 * known only by its string adds none) as agent homes and the target's local root (target.describe
 * `localRoot` of dir: and btrfs: targets; any file for targets without one, e.g. VMs, or when the
 * description is not known).
 * @param config.stores the configured stores, as descriptions where the sidecar gave them
 */
export function riskyConfigOf(
  file: string,
  config: { stores: readonly StoreRef[] },
  target?: Pick<TargetDescription, 'localRoot'>,
): RiskyConfig | undefined {
  const homes = config.stores.map(storeLocalRoot).filter((h): h is string => !!h);
  return riskyConfigInScope(file, homes, target?.localRoot);
}
