/**
 * Retention of restore points (issue 6, "Restore-point lifecycle"): which restore points of one
 * target a prune deletes, and why each one is kept or deleted. Pure: no I/O, the clock is a param.
 *
 * Rules, in order of precedence:
 *   1. the newest restore point (the "current" one) is always kept;
 *   2. a restore point younger than `minAgeMs` (default one hour) is always kept;
 *   3. the newest `keep` restore points (default 20) are kept;
 *   4. the newest `keepImportant` important restore points (default 10) are kept;
 *   5. a pre/post pair (a post has `pairOf` = the pre's id) is kept or deleted as a whole: if one
 *      side is kept by rules 1-4, the other side is kept too (chains of pairs, where a post is also
 *      the pre of a later post, go as a whole);
 *   6. everything else is deleted.
 * A pair whose two sides do not differ (the caller found it so with the backend's compare and passes
 * the post's id in `identicalPairs`) is not kept by rule 3 and does not use up one of the `keep`
 * slots: it is deleted unless rule 1, 2 or 4 keeps one of its sides.
 */
import type { RestorePoint } from '../protocol';

/** Default number of newest restore points kept. */
export const DEFAULT_KEEP = 20;
/** Default number of newest important restore points kept. */
export const DEFAULT_KEEP_IMPORTANT = 10;
/** Restore points younger than this are never deleted (ms; one hour). */
export const DEFAULT_MIN_AGE_MS = 3_600_000;

/** Options of planPrune. */
export interface PruneOptions {
  /** Newest restore points kept whatever they are (>= 0; default 20). */
  keep?: number;
  /** Newest important restore points kept on top of that (>= 0; default 10). */
  keepImportant?: number;
  /** Restore points younger than this are kept (ms; default 3600000). */
  minAgeMs?: number;
  /** The clock, ms since the epoch (default Date.now()). */
  now?: number;
}

/** One decision: the restore point's id and the reason, a sentence fragment such as "newest (current)". */
export interface PruneDecision {
  id: string;
  reason: string;
}

/** The plan: what a prune deletes and what it keeps, newest first in each list. */
export interface PrunePlan {
  delete: PruneDecision[];
  keep: PruneDecision[];
}

/** Points newest first (createdAt, then id, as Journal.list orders them). */
function newestFirst(points: readonly RestorePoint[]): RestorePoint[] {
  return [...points].sort((a, b) =>
    a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
  );
}

function nonNegInt(v: number | undefined, def: number, what: string): number {
  if (v === undefined) return def;
  if (!Number.isInteger(v) || v < 0) throw new RangeError(`${what} must be a whole number >= 0, got ${v}`);
  return v;
}

function hours(ms: number): string {
  if (ms <= 0) return '0 s';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * Plan a prune of one target's restore points.
 * @param points all restore points of the target (any order)
 * @param opts keep / keepImportant / minAgeMs / now (see PruneOptions)
 * @param identicalPairs ids of post restore points whose pre (`pairOf`) does not differ from them
 * @returns every point exactly once, in `delete` or `keep`, each with its reason; newest first.
 *   A restore point whose createdAt does not parse counts as young (kept).
 * @throws RangeError for a negative or fractional keep / keepImportant / minAgeMs.
 */
export function planPrune(
  points: readonly RestorePoint[],
  opts: PruneOptions = {},
  identicalPairs: ReadonlySet<string> = new Set(),
): PrunePlan {
  const keepN = nonNegInt(opts.keep, DEFAULT_KEEP, 'keep');
  const keepImp = nonNegInt(opts.keepImportant, DEFAULT_KEEP_IMPORTANT, 'keepImportant');
  const minAge = nonNegInt(opts.minAgeMs, DEFAULT_MIN_AGE_MS, 'minAgeMs');
  // the age rule in the reason of a deletion; none with --min-age 0 (nothing is kept for its age)
  const olderThan = minAge > 0 ? `, and older than ${hours(minAge)}` : '';
  const now = opts.now ?? Date.now();
  const sorted = newestFirst(points);
  const present = new Set(sorted.map((rp) => rp.id));
  // Both sides of every pair that does not differ.
  const same = new Set<string>();
  for (const rp of sorted) {
    if (rp.pairOf && identicalPairs.has(rp.id) && present.has(rp.pairOf)) {
      same.add(rp.id);
      same.add(rp.pairOf);
    }
  }
  const reasons = new Map<string, string>(); // id -> why it is kept (rules 1-4)
  let importantSeen = 0;
  let rank = 0; // position among the points that count toward `keep`
  sorted.forEach((rp, i) => {
    const t = Date.parse(rp.createdAt);
    const counts = !same.has(rp.id);
    if (counts) rank++;
    let why: string | undefined;
    if (i === 0) why = 'newest (the current restore point)';
    else if (!Number.isFinite(t) || now - t < minAge) why = `younger than ${hours(minAge)}`;
    else if (counts && rank <= keepN) why = `among the newest ${keepN}`;
    if (rp.important) {
      importantSeen++;
      if (!why && importantSeen <= keepImp) why = `important, among the newest ${keepImp} important`;
    }
    if (why) reasons.set(rp.id, why);
  });
  // Pairs: a post and its pre form one group; chains (a post reused as the pre of the next command,
  // several posts of one pre) join into one group (union-find), kept or deleted as a whole.
  const parent = new Map(sorted.map((rp) => [rp.id, rp.id]));
  const find = (id: string): string => {
    let r = id;
    while (parent.get(r) !== r) r = parent.get(r)!;
    parent.set(id, r);
    return r;
  };
  for (const rp of sorted) if (rp.pairOf && present.has(rp.pairOf)) parent.set(find(rp.id), find(rp.pairOf));
  const groupOf = (rp: RestorePoint): string => find(rp.id);
  const groups = new Map<string, RestorePoint[]>();
  for (const rp of sorted) {
    const g = groupOf(rp);
    groups.set(g, [...(groups.get(g) ?? []), rp]);
  }
  const plan: PrunePlan = { delete: [], keep: [] };
  for (const rp of sorted) {
    const own = reasons.get(rp.id);
    if (own) {
      plan.keep.push({ id: rp.id, reason: own });
      continue;
    }
    const mates = (groups.get(groupOf(rp)) ?? []).filter((m) => m.id !== rp.id);
    const keptMate = mates.find((m) => reasons.has(m.id));
    if (keptMate) {
      plan.keep.push({
        id: rp.id,
        reason: `other half of the pre/post pair with ${keptMate.id}, which is kept (${reasons.get(keptMate.id)})`,
      });
      continue;
    }
    if (same.has(rp.id)) {
      plan.delete.push({
        id: rp.id,
        reason: `its pre/post pair ${mates.map((m) => m.id).join(', ')} does not differ from it${olderThan}`,
      });
      continue;
    }
    const base = `older than the newest ${keepN}${rp.important ? ` and than the newest ${keepImp} important` : ''}${olderThan}`;
    plan.delete.push({
      id: rp.id,
      reason: mates.length ? `${base} (with its pre/post pair ${mates.map((m) => m.id).join(', ')})` : base,
    });
  }
  return plan;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parse a duration such as `1h`, `30m`, `90s`, `2d`, `500ms` or `0` into milliseconds (units: ms, s,
 * m or min, h, d; a whole number; `1h30m` combines).
 * @throws RangeError naming the text and the accepted forms.
 */
export function parseDuration(text: string): number {
  const s = text.trim().toLowerCase();
  if (s === '0') return 0;
  const re = /(\d+)\s*(ms|min|s|m|h|d)/gy;
  let total = 0;
  let end = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    end = re.lastIndex;
  }
  if (!s || end !== s.length)
    throw new RangeError(`"${text}" is not a duration: use e.g. 1h, 30m, 90s, 2d, 1h30m or 0`);
  return total;
}
