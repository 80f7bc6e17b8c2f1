/**
 * The sidecar's state dir: where the journal, the object store, the dir-backend manifests and the
 * locks live. <targetKey> = first 16 hex chars of sha256("dir:" + realpath of the target directory).
 * Layout (all below the state dir):
 *   journal/<targetKey>/target.json        {target} of this journal
 *   journal/<targetKey>/<id>.json          one restore point (RestorePoint JSON)
 *   objects/<hh>/<sha256>                  content-addressed objects, shared by every target
 *   objects/tmp/<pid>-<hex>                temp files of objects being written (swept when <pid> is dead or after 24 h)
 *   dir/<targetKey>/<snapshotId>.json      dir-backend manifests
 *   locks/<targetKey>.lock                 target lock (create/restore/delete)
 *   locks/gc.lock, locks/inflight/         garbage-collection handshake
 *   guest-backups/<time>-<guest>-<name>    old content of a guest file, saved before guest write replaced it
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from './errors';

/** Paths of the state dir. */
export class StateLayout {
  constructor(readonly root: string) {}
  get journalRoot(): string {
    return path.join(this.root, 'journal');
  }
  journalDir(key: string): string {
    return path.join(this.root, 'journal', key);
  }
  get objectsDir(): string {
    return path.join(this.root, 'objects');
  }
  get dirBackendRoot(): string {
    return path.join(this.root, 'dir');
  }
  get locksDir(): string {
    return path.join(this.root, 'locks');
  }
  targetLock(key: string): string {
    return path.join(this.root, 'locks', `${key}.lock`);
  }
  get gcLock(): string {
    return path.join(this.root, 'locks', 'gc.lock');
  }
  /** Where guest write keeps the old content of the files it replaces (mode 700, files 600). */
  get guestBackupsDir(): string {
    return path.join(this.root, 'guest-backups');
  }
  get inflightDir(): string {
    return path.join(this.root, 'locks', 'inflight');
  }
}

/**
 * The state dir to use: `explicit` (CoreOptions.stateDir / --state-dir), else AGENTKEEP_STATE_DIR,
 * else $XDG_STATE_HOME/agentkeep, else ~/.local/state/agentkeep. Always an absolute path.
 * @throws AgentKeepError BadStateDir for a relative explicit or environment path.
 */
export function resolveStateDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const pick = (p: string, from: string): string => {
    if (!path.isAbsolute(p)) {
      throw new AgentKeepError('BadStateDir', `State dir "${p}" (from ${from}) is not an absolute path.`, 'Give an absolute path, e.g. --state-dir /home/me/.local/state/agentkeep.');
    }
    return path.resolve(p);
  };
  if (explicit) return pick(explicit, '--state-dir');
  if (env.AGENTKEEP_STATE_DIR) return pick(env.AGENTKEEP_STATE_DIR, 'AGENTKEEP_STATE_DIR');
  if (env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME)) return path.join(env.XDG_STATE_HOME, 'agentkeep');
  return path.join(os.homedir(), '.local', 'state', 'agentkeep');
}

/** realpath of `p`, or of its nearest existing ancestor joined with the rest (for paths not yet created). */
export async function realpathLoose(p: string): Promise<string> {
  const rest: string[] = [];
  let cur = path.resolve(p);
  for (;;) {
    try {
      const real = await fs.realpath(cur);
      return rest.length ? path.join(real, ...rest.reverse()) : real;
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return path.resolve(p);
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

/** Whether `child` is `parent` or lies below it (both absolute, normalised). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Refuse a state dir inside the target (a restore would roll back the journal itself) and a target
 * inside the state dir. Symlinks are resolved.
 * @throws AgentKeepError BadStateDir naming both paths, with a hint to move the state dir.
 */
export async function checkStateDirVsTarget(stateDir: string, targetPath: string): Promise<void> {
  const s = await realpathLoose(stateDir);
  const t = await realpathLoose(targetPath);
  if (isInside(s, t)) {
    throw new AgentKeepError(
      'BadStateDir',
      `The state dir ${stateDir} is inside the target ${targetPath}; a restore would roll back the restore points themselves.`,
      `Put the state dir outside the target: --state-dir ${path.join(os.homedir(), '.local', 'state', 'agentkeep')} (or AGENTKEEP_STATE_DIR).`,
    );
  }
  if (isInside(t, s)) {
    throw new AgentKeepError(
      'BadStateDir',
      `The target ${targetPath} is inside the state dir ${stateDir}.`,
      'Pick a target outside the state dir, or move the state dir with --state-dir / AGENTKEEP_STATE_DIR.',
    );
  }
}

/**
 * Create the state dir (mode 0700) and check it is a writable directory.
 * @throws AgentKeepError BadStateDir when it cannot be created or written.
 */
export async function ensureStateDir(layout: StateLayout): Promise<void> {
  try {
    await fs.mkdir(layout.root, { recursive: true, mode: 0o700 });
    const st = await fs.stat(layout.root);
    if (!st.isDirectory()) throw new Error('not a directory');
    await fs.access(layout.root, fs.constants.W_OK);
    await fs.mkdir(layout.locksDir, { recursive: true });
    await fs.mkdir(layout.inflightDir, { recursive: true });
  } catch (e) {
    throw new AgentKeepError(
      'BadStateDir',
      `The state dir ${layout.root} is not usable: ${(e as Error).message}.`,
      'Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory.',
    );
  }
}
