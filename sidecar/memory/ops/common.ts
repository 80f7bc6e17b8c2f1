/**
 * What every memory operation shares (sidecar/memory/ops): the context from the core, where the
 * bytes replaced by a write are kept, and the refusals of stores that cannot write.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { RestorePoint } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import { diskFullError, isNoSpace } from '../../core/fsutil';
import type { MemoryStoreAdapter, WriteOptions } from '../types';

/** Context the memory operations get from the core (restore-point access for diff). */
export interface MemoryOpsContext {
  /** The state dir in use (journal + objects). */
  stateDir: string;
  /** A restore point of `target` by id (memory.diff). @throws RestorePointNotFound */
  getRestorePoint?(target: string, id: string): Promise<RestorePoint>;
  /** The restore points of `target`, oldest first (memory.history). */
  listRestorePoints?(target: string): Promise<RestorePoint[]>;
  /** Content of a stored object by hash (agent-state captures). @throws CorruptSnapshot */
  readObject?(hash: string): Promise<Buffer>;
}

export function unsupported(s: MemoryStoreAdapter, what: string): AgentKeepError {
  return new AgentKeepError(
    'Unsupported',
    `The ${s.kind} store ${s.spec} cannot ${what}.`,
    "Use memory list to see its entries, or change them with the agent's own tools.",
  );
}

/**
 * @throws Unsupported when the store is read-only in AgentKeep (readOnlyReason), the reason in the
 * message (it says how to make the store editable, e.g. Agent Zero's AGENTKEEP_A0_URL).
 */
export async function refuseReadOnly(s: MemoryStoreAdapter): Promise<void> {
  const why = await s.readOnlyReason?.();
  if (!why) return;
  throw new AgentKeepError(
    'Unsupported',
    `${s.spec} is read-only in AgentKeep: ${why.replace(/[.\s]+$/, '')}.`,
    "Do what the message says to let AgentKeep edit it, or change the entry with the agent's own tools meanwhile.",
  );
}

/** Where the bytes replaced by memory writes of a store are kept. */
export function backupDir(stateDir: string, s: MemoryStoreAdapter): string {
  const key = createHash('sha256').update(`${s.kind}:${s.location}`).digest('hex').slice(0, 16);
  return path.join(stateDir, 'memory-backups', `${s.kind}-${key}`);
}

/** The write options of every AgentKeep memory write: back up the bytes replaced (see backupDir). */
export function writeOpts(ctx: MemoryOpsContext, s: MemoryStoreAdapter): WriteOptions {
  return {
    beforeWrite: async (file, previous) => {
      const dir = backupDir(ctx.stateDir, s);
      const backup = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${path.basename(file)}`);
      try {
        await fs.mkdir(dir, { recursive: true, mode: 0o700 }); // (a state dir made here is private too)
        await fs.writeFile(backup, previous, { flag: 'wx', mode: 0o600 });
      } catch (e) {
        // never a torn backup (a name taken already, EEXIST, is another write's)
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') await fs.rm(backup, { force: true }).catch(() => undefined);
        if (!isNoSpace(e)) throw e;
        throw await diskFullError(dir, e, `Cannot keep the backup of ${file} before writing it, so it was not written`);
      }
      await fs.writeFile(path.join(dir, 'store.txt'), `${s.spec}\n`, { mode: 0o600 }).catch(() => undefined);
    },
  };
}
