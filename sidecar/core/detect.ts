/**
 * Detection of memory stores inside a target, for a create (and a restore) that names no stores:
 * every registered store kind looks in the target's local root (StoreFactory.detect in
 * sidecar/memory/<kind>/factory.ts: Hermes homes, Agent Zero roots, mem0 directories).
 */
import { detectStores as detectInLocalRoot, type MemoryStoreAdapter } from '../memory';
import { describeParsedTarget, type ParsedTarget } from './target';

/**
 * Stores found in a target by the registered store kinds (sidecar/memory/index.ts detectStores), in
 * registration order (Hermes homes first). None for a target without a local directory (VM targets).
 * @param targetPath the target's local root (ParsedTarget.path; empty when there is none)
 */
export async function detectStores(targetPath: string): Promise<MemoryStoreAdapter[]> {
  return detectInLocalRoot(targetPath);
}

/**
 * Stores found in a target's local root (target.describe `localRoot`: dir and btrfs targets); none
 * for a target without one (VMs: the QMP socket or a remote guest is no directory to look in).
 */
export async function detectTargetStores(t: ParsedTarget): Promise<MemoryStoreAdapter[]> {
  return detectInLocalRoot(describeParsedTarget(t).localRoot);
}
