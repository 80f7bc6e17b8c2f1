/**
 * Which risky config files belong to the configured agent (no `vscode` import, unit-tested on Node):
 * the scoping of the config-file lens and prompt (extension/configFiles.ts).
 */
import * as path from 'node:path';
import type { TargetDescription } from '../sidecar/protocol';
import { riskyConfigFile, type RiskyConfig } from '../sidecar/protocol/configFiles';
import { storeLocalRoot, type StoreRef } from './format';

/** Whether `file` is inside `dir` (or is it). */
export function inside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file);
  return rel === '' || (!!rel && !rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Why a file is a risky config file of the configured agent, or undefined: riskyConfigFile with the
 * stores' local roots (StoreDescription.localRoot; a store known only by its string adds none) as
 * agent homes, and only for files a restore point of the target covers (inside the target's local
 * root, target.describe `localRoot` of dir: and btrfs: targets, or a store root; any file for
 * targets without a local root, e.g. VMs, or when the description is not known).
 * @param config.stores the configured stores, as descriptions where the sidecar gave them
 */
export function riskyConfigOf(
  file: string,
  config: { stores: readonly StoreRef[] },
  target?: Pick<TargetDescription, 'localRoot'>,
): RiskyConfig | undefined {
  const homes = config.stores.map(storeLocalRoot).filter((h): h is string => !!h);
  const risky = riskyConfigFile(file, homes);
  if (!risky) return undefined;
  const root = target?.localRoot;
  if (root && !inside(file, root) && !homes.some((h) => inside(file, h))) return undefined;
  return risky;
}
