/**
 * Detection of memory stores inside a target, for a create (and a restore) that names no stores:
 * every registered store kind looks in the target's local root (StoreFactory.detect in
 * sidecar/memory/<kind>/factory.ts: Hermes homes, Agent Zero roots, mem0 directories).
 */
import { detectStores as detectInLocalRoot, type MemoryStoreAdapter } from '../memory';

/**
 * Stores found in a target by the registered store kinds (sidecar/memory/index.ts detectStores), in
 * registration order (Hermes homes first). None for a target without a local directory (VM targets).
 * @param targetPath the target's local root (ParsedTarget.path; empty when there is none)
 */
export async function detectStores(targetPath: string): Promise<MemoryStoreAdapter[]> {
  return detectInLocalRoot(targetPath);
}
