/** Entry-level comparison of two snapshots of one store (memory.diff, memory.history). */
import type { MemoryEntry, MemoryFile, ResultOf } from '../../protocol';

/** Entries keyed by file kind + text (an edited entry = removed + added unless its position matches). */
function flatten(files: MemoryFile[], spec: string): MemoryEntry[] {
  return files.flatMap((f) =>
    f.entries.map((e) => ({ ...e, store: e.store ?? spec, meta: { ...(e.meta ?? {}), fileKind: f.kind } })),
  );
}

/**
 * Pair entries of two snapshots of one store: same id = unchanged; otherwise, within the same file
 * kind, a removed and an added entry at the same position (index among that file's entries) count as
 * one changed entry; the rest are added / removed.
 */
export function diffEntries(
  spec: string,
  before: MemoryFile[],
  after: MemoryFile[],
): Pick<ResultOf<'memoryDiff'>, 'added' | 'removed' | 'changed'> {
  const out: Pick<ResultOf<'memoryDiff'>, 'added' | 'removed' | 'changed'> = { added: [], removed: [], changed: [] };
  const kinds = [...new Set([...before.map((f) => f.kind), ...after.map((f) => f.kind)])];
  for (const kind of kinds) {
    const b = flatten(
      before.filter((f) => f.kind === kind),
      spec,
    );
    const a = flatten(
      after.filter((f) => f.kind === kind),
      spec,
    );
    const bIds = new Set(b.map((e) => e.id));
    const aIds = new Set(a.map((e) => e.id));
    const gone = b.map((e, i) => ({ e, i })).filter((x) => !aIds.has(x.e.id));
    const fresh = a.map((e, i) => ({ e, i })).filter((x) => !bIds.has(x.e.id));
    const strip = (e: MemoryEntry): MemoryEntry => {
      const { fileKind: _k, ...meta } = (e.meta ?? {}) as Record<string, unknown>;
      return { ...e, ...(Object.keys(meta).length ? { meta } : { meta: undefined }) };
    };
    const used = new Set<number>();
    for (const g of gone) {
      const m = fresh.find((f) => f.i === g.i && !used.has(f.i));
      if (m) {
        used.add(m.i);
        out.changed.push({ store: spec, before: clean(strip(g.e)), after: clean(strip(m.e)) });
      } else out.removed.push({ store: spec, before: clean(strip(g.e)) });
    }
    for (const f of fresh) if (!used.has(f.i)) out.added.push({ store: spec, after: clean(strip(f.e)) });
    // stores with stable ids (Agent Zero, mem0): the same id with another text is a change
    const aById = new Map(a.map((e) => [e.id, e]));
    for (const e of b) {
      const x = aById.get(e.id);
      if (x && x.text !== e.text) out.changed.push({ store: spec, before: clean(strip(e)), after: clean(strip(x)) });
    }
  }
  return out;
}

function clean(e: MemoryEntry): MemoryEntry {
  const o = { ...e } as Record<string, unknown>;
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o as MemoryEntry;
}
