/**
 * Git repositories inside a target that a machine restore changes (restorePoint.preview
 * `gitRepos`; issue 13 item 6, cline#13550): a restore puts a repository's `.git` back as it was, so
 * its HEAD and branches move back and the commits made since leave it, without git being asked.
 *
 * Found from the restore's own file changes: every changed path with a `.git` segment belongs to
 * the repository in the folder above it. HEAD and branches are read as git keeps them, as files
 * (HEAD, loose refs under refs/, packed-refs), now from the target and then from the snapshot
 * (backend readFile); a file the restore does not change is the same on both sides. Git itself is
 * never run (a repository's config can make git run programs). Refs in reftable format are not read
 * (the repository is named with a note).
 */
import type { MachineChanges } from '../machine';
import type { GitHead, GitRepoChange } from '../protocol';

/** Reads one target-relative file as text; undefined when it is not a regular file there. */
export type ReadText = (rel: string) => Promise<string | undefined>;

/** The two sides a restore goes between: the target now, and the snapshot it restores. */
export interface GitSides {
  now: ReadText;
  then: ReadText;
}

type Status = 'added' | 'removed' | 'changed';
type Side = 'now' | 'then';

const SHA = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** Whether a path inside a .git folder (relative to it) bears on HEAD or branches. */
function bearsOnRefs(rest: string): boolean {
  return (
    rest === '' ||
    rest === 'HEAD' ||
    rest === 'packed-refs' ||
    rest.startsWith('refs/heads/') ||
    rest.startsWith('reftable/')
  );
}

/**
 * The git repositories whose HEAD or branches change when the target goes from `now` to `then`.
 * @param changes the restore's changes (added = only now, removed = only then), target-relative
 * @param max most repositories returned (the rest are left out)
 * @returns one item per repository, by path
 */
export async function gitRepoChanges(changes: MachineChanges, sides: GitSides, max = 50): Promise<GitRepoChange[]> {
  const repos = new Map<string, Map<string, Status>>();
  const lists: Array<[string[], Status]> = [
    [changes.added, 'added'],
    [changes.removed, 'removed'],
    [changes.changed, 'changed'],
  ];
  for (const [list, st] of lists) {
    for (const p of list) {
      const segs = p.split('/');
      const i = segs.indexOf('.git');
      if (i < 0) continue;
      const rest = segs.slice(i + 1).join('/');
      if (!bearsOnRefs(rest)) continue;
      const gitDir = segs.slice(0, i + 1).join('/');
      let m = repos.get(gitDir);
      if (!m) repos.set(gitDir, (m = new Map()));
      m.set(rest, st);
    }
  }
  const out: GitRepoChange[] = [];
  for (const [gitDir, statuses] of [...repos].sort(([a], [b]) => a.localeCompare(b))) {
    if (out.length >= max) break;
    const r = await repoChange(gitDir, statuses, sides);
    if (r) out.push(r);
  }
  return out;
}

async function repoChange(
  gitDir: string,
  statuses: Map<string, Status>,
  sides: GitSides,
): Promise<GitRepoChange | undefined> {
  const repoPath = gitDir === '.git' ? '.' : gitDir.slice(0, -'/.git'.length);
  const read = (side: Side, rest: string): Promise<string | undefined> => {
    const st = statuses.get(rest);
    const rel = `${gitDir}/${rest}`;
    if (side === 'now') return st === 'removed' ? Promise.resolve(undefined) : sides.now(rel);
    if (st === 'added') return Promise.resolve(undefined);
    // a file the restore does not change is the same in the snapshot as now
    return st ? sides.then(rel) : sides.now(rel);
  };
  const packed = {
    now: parsePackedRefs(await read('now', 'packed-refs')),
    then: parsePackedRefs(await read('then', 'packed-refs')),
  };
  const resolve = async (side: Side, ref: string, depth = 0): Promise<string | undefined> => {
    const loose = (await read(side, ref))?.trim();
    if (loose?.startsWith('ref: ') && depth < 5) return resolve(side, loose.slice(5).trim(), depth + 1);
    if (loose && SHA.test(loose)) return loose;
    return packed[side].get(ref);
  };
  const head = async (side: Side): Promise<GitHead | undefined> => {
    const text = (await read(side, 'HEAD'))?.trim();
    if (!text) return undefined;
    if (text.startsWith('ref: ')) {
      const ref = text.slice(5).trim();
      const commit = await resolve(side, ref);
      return { ref, ...(commit ? { commit } : {}) };
    }
    return SHA.test(text) ? { commit: text } : {};
  };
  const current = await head('now');
  const restored = await head('then');
  const reftable = [...statuses.keys()].some((k) => k.startsWith('reftable/'));
  const note = reftable
    ? 'Its refs are kept in reftable format, which AgentKeep does not read: HEAD and branches may change too.'
    : undefined;
  if (!current && !restored) {
    // no HEAD on either side: not a repository folder AgentKeep can read (e.g. .git is a file pointing elsewhere)
    return note ? { path: repoPath, effect: 'moved', head: {}, branches: [], note } : undefined;
  }
  if (!restored || !current) {
    const effect = restored ? 'brought-back' : 'removed';
    return {
      path: repoPath,
      effect,
      head: { ...(current ? { current } : {}), ...(restored ? { restored } : {}) },
      branches: [],
    };
  }
  // branches that may differ: loose refs the restore changes, and every packed one when packed-refs changes
  const names = new Set<string>();
  for (const rest of statuses.keys()) if (rest.startsWith('refs/heads/')) names.add(rest);
  if (statuses.has('packed-refs')) {
    for (const side of ['now', 'then'] as const)
      for (const ref of packed[side].keys()) if (ref.startsWith('refs/heads/')) names.add(ref);
  }
  const branches: GitRepoChange['branches'] = [];
  for (const ref of [...names].sort()) {
    const [now, then] = [await resolve('now', ref), await resolve('then', ref)];
    if (now === then) continue;
    branches.push({
      name: ref.slice('refs/heads/'.length),
      ...(now ? { current: now } : {}),
      ...(then ? { restored: then } : {}),
    });
  }
  const headMoves = current.ref !== restored.ref || current.commit !== restored.commit;
  if (!headMoves && !branches.length && !note) return undefined;
  return { path: repoPath, effect: 'moved', head: { current, restored }, branches, ...(note ? { note } : {}) };
}

/** `packed-refs` as ref name -> commit (peeled `^` lines and comments skipped). */
export function parsePackedRefs(text: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of (text ?? '').split('\n')) {
    const m = /^([0-9a-f]{40}(?:[0-9a-f]{24})?) (\S+)$/.exec(line.trim());
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}
