/**
 * Whether a process is alive, for stale locks, dead hand-off sockets and journal barriers. No imports
 * at all: the hook's light entry (out/hook.js, ../hooks/handoff.ts) loads it, so it must not bring
 * any other module of the sidecar with it. ./lock.ts re-exports it for the core.
 */

/**
 * Whether process `pid` is alive on this host: `kill(pid, 0)` succeeds, or fails with EPERM (it
 * exists, owned by another user). A pid that is not a whole number >= 1 is never alive (0 and
 * negative numbers would signal a process group).
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException | undefined)?.code === 'EPERM';
  }
}
