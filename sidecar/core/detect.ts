/**
 * Detection of memory stores inside a target, for a create (and a restore) that names no stores.
 * Today: Hermes homes in a local directory tree (dir and btrfs targets).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { openStore, type MemoryStoreAdapter } from '../memory';

/**
 * Hermes homes found in a target: the target itself when it is a Hermes home (memories/, or
 * config.yaml and SOUL.md), `<target>/.hermes`, and every `<target>/.hermes/profiles/<name>` that is
 * one (HermesStore.check passes). None for a target without a local directory (VM targets).
 * @param targetPath the target's local root (ParsedTarget.path; empty when there is none)
 */
export async function detectStores(targetPath: string): Promise<MemoryStoreAdapter[]> {
  const out: MemoryStoreAdapter[] = [];
  // Only targets that are a local directory tree (dir, btrfs) can hold stores we read directly.
  if (!targetPath || !(await fs.stat(targetPath).then((st) => st.isDirectory(), () => false))) return out;
  const isDir = (p: string): Promise<boolean> => fs.stat(p).then((st) => st.isDirectory(), () => false);
  const exists = (p: string): Promise<boolean> => fs.lstat(p).then(() => true, () => false);
  const ok = async (home: string): Promise<MemoryStoreAdapter | undefined> => {
    const s = openStore(`hermes:${home}`);
    return (await s.check().then(() => true, () => false)) ? s : undefined;
  };
  const rootLooksHermes =
    (await isDir(path.join(targetPath, 'memories'))) || ((await exists(path.join(targetPath, 'config.yaml'))) && (await exists(path.join(targetPath, 'SOUL.md'))));
  const candidates = rootLooksHermes ? [targetPath] : [];
  const dot = path.join(targetPath, '.hermes');
  if (await isDir(dot)) {
    candidates.push(dot);
    const profiles = path.join(dot, 'profiles');
    const names = await fs.readdir(profiles).catch(() => [] as string[]);
    for (const n of names.sort()) candidates.push(path.join(profiles, n));
  }
  for (const c of candidates) {
    const s = await ok(c);
    if (s) out.push(s);
  }
  return out;
}
