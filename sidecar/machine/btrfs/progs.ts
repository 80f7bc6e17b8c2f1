/**
 * Thin wrapper over the btrfs-progs command line (`btrfs subvolume snapshot|delete`,
 * `btrfs filesystem du`) and the filesystem facts the btrfs backend checks (statfs magic, subvolume
 * root inode, mount points). Failures become AgentKeepErrors naming the problem and the fix:
 * btrfs-progs missing, permission denied, not a subvolume, not btrfs.
 * Sources: btrfs-subvolume(8), btrfs-filesystem(8) of btrfs-progs 6.2; linux fs/btrfs (the root
 * directory of every subvolume has inode number 256, BTRFS_FIRST_FREE_OBJECTID; statfs f_type
 * BTRFS_SUPER_MAGIC 0x9123683e).
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { AgentKeepError } from '../../core/errors';

/** statfs f_type of btrfs (linux/magic.h BTRFS_SUPER_MAGIC). */
export const BTRFS_SUPER_MAGIC = 0x9123683e;
/** Inode number of the root directory of every btrfs subvolume (BTRFS_FIRST_FREE_OBJECTID). */
export const SUBVOLUME_ROOT_INO = 256;

/** The hint for a permission problem. */
const PERM_HINT =
  'Run the sidecar as root, or give it CAP_SYS_ADMIN; to let a normal user delete snapshots mount the filesystem with -o user_subvol_rm_allowed.';

/**
 * Run `btrfs ...args`, resolving with stdout.
 * @throws AgentKeepError Unsupported when btrfs-progs is not installed (hint: apt install btrfs-progs),
 *   Hypervisor-free kinds: FileError for "Permission denied"/"Operation not permitted" (hint: root,
 *   CAP_SYS_ADMIN, user_subvol_rm_allowed), Internal with btrfs's own message otherwise.
 */
export function btrfs(args: string[], what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'btrfs',
      args,
      { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
          return reject(
            new AgentKeepError(
              'Unsupported',
              `Cannot ${what}: the btrfs command (btrfs-progs) is not installed.`,
              "Install it: apt install btrfs-progs (or your distribution's btrfs-progs package).",
            ),
          );
        }
        const text = (stderr || err.message)
          .trim()
          .split('\n')
          .filter((l) => l.trim())
          .slice(-3)
          .join(' ');
        if (/Permission denied|Operation not permitted|EPERM|EACCES/i.test(text)) {
          return reject(
            new AgentKeepError('FileError', `Cannot ${what}: permission denied (btrfs: ${text}).`, PERM_HINT),
          );
        }
        reject(
          new AgentKeepError(
            'Internal',
            `Cannot ${what}: btrfs ${args.join(' ')} failed: ${text}.`,
            'See the btrfs message; `btrfs subvolume list <mountpoint>` shows the subvolumes.',
          ),
        );
      },
    );
  });
}

/** A permission error of a plain fs call as an AgentKeepError with the btrfs hint. */
export function permissionError(what: string, e: unknown): AgentKeepError {
  return new AgentKeepError('FileError', `Cannot ${what}: ${(e as Error).message}.`, PERM_HINT);
}

/** Whether `p` lies on a btrfs filesystem (statfs). Throws what fs.statfs throws (ENOENT, EACCES). */
export async function isBtrfs(p: string): Promise<boolean> {
  const st = await fs.statfs(p);
  return st.type === BTRFS_SUPER_MAGIC;
}

/** Whether the directory `p` (on btrfs) is the root of a subvolume (its inode number is 256). */
export async function isSubvolumeRoot(p: string): Promise<boolean> {
  const st = await fs.stat(p);
  return st.isDirectory() && st.ino === SUBVOLUME_ROOT_INO;
}

/** Mount points from /proc/self/mountinfo (field 5, octal escapes decoded). */
export async function mountPoints(): Promise<Set<string>> {
  const text = await fs.readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length > 4) out.add(f[4].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
  }
  return out;
}

/** `btrfs filesystem du -s --raw` of each path: total (logical bytes), exclusive, set shared. */
export async function filesystemDu(
  paths: string[],
): Promise<Map<string, { total: number; exclusive: number; shared: number }>> {
  const out = new Map<string, { total: number; exclusive: number; shared: number }>();
  if (!paths.length) return out;
  const text = await btrfs(['filesystem', 'du', '-s', '--raw', ...paths], "measure the snapshots' disk use");
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\d+|-)\s+(.+)$/.exec(line);
    if (m) out.set(m[4], { total: Number(m[1]), exclusive: Number(m[2]), shared: m[3] === '-' ? 0 : Number(m[3]) });
  }
  return out;
}
