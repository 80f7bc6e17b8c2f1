/**
 * The memory inspector's pure logic (no DOM): the rows of the entry list, the search and filters,
 * and the text formatting of the detail pane. Unit-tested in test/unit/memory-inspector.test.ts.
 */
import type { LintFinding, MemoryEntry, MemoryFile, MemoryWrite, Provenance } from '../../sidecar/protocol';
import { storeLabel, storeSummary } from '../../sidecar/protocol/stores';
import type { StoreView } from './messages';

/** One entry of the list with where it lives and the findings that name it. */
export interface Row {
  store: string;
  file: MemoryFile;
  entry: MemoryEntry;
  findings: LintFinding[];
}

/** The list's search and filters; "" = no filter. `finding` "*" = entries with any finding. */
export interface Filter {
  text: string;
  store: string;
  area: string;
  finding: string;
}

/**
 * The area of an entry: the one its store gives it (MemoryEntry.area: Hermes memory, user, soul, skill,
 * archive; Agent Zero main, fragments, ...), else the last part of the file kind, which is
 * `<store kind>-<area>` or the store kind alone (MemoryFile.kind: `hermes-user` -> user, `mem0` -> mem0).
 * No store kind is named here.
 */
export function areaOf(file: MemoryFile, e: MemoryEntry): string {
  return e.area ?? file.kind.slice(file.kind.lastIndexOf('-') + 1);
}

/** Every entry of every file of every store, in store/file order, with its findings. */
export function buildRows(stores: readonly StoreView[], findings: readonly LintFinding[]): Row[] {
  const out: Row[] = [];
  for (const s of stores) {
    for (const f of s.files) {
      for (const e of f.entries)
        out.push({ store: s.store, file: f, entry: e, findings: findings.filter((x) => x.entries.includes(e.id)) });
    }
  }
  return out;
}

/**
 * Whether a row passes the filters. Text search: every whitespace-separated word (case-insensitive)
 * occurs in the entry text, id, source or file path.
 */
export function rowMatches(r: Row, filter: Filter): boolean {
  if (filter.store && r.store !== filter.store) return false;
  if (filter.area && areaOf(r.file, r.entry) !== filter.area) return false;
  if (filter.finding === '*' && !r.findings.length) return false;
  if (filter.finding && filter.finding !== '*' && !r.findings.some((f) => f.kind === filter.finding)) return false;
  if (filter.text) {
    const hay = `${r.entry.text}\n${r.entry.id}\n${r.entry.source ?? ''}\n${r.file.file}`.toLowerCase();
    if (
      !filter.text
        .toLowerCase()
        .split(/\s+/)
        .filter(Boolean)
        .every((w) => hay.includes(w))
    )
      return false;
  }
  return true;
}

/**
 * A store's short label, "kind · name" from its description (e.g. "hermes · agent-home/.hermes"),
 * or the store string as configured when the sidecar gave no description (it is never parsed here).
 */
export function storeName(s: Pick<StoreView, 'store' | 'description'>): string {
  return s.description ? storeLabel(s.description) : s.store;
}

/** What a store is and can do, one line (for a tooltip), or the store string without a description. */
export function storeTitle(s: Pick<StoreView, 'store' | 'description'>): string {
  return s.description ? `${s.store}\n${storeSummary(s.description)}` : s.store;
}

/** The last segment of a path. */
export function basename(p: string): string {
  return p.split(/[\\/]/).pop() ?? p;
}

/** The first non-empty line, cut to `max` characters (default 120) with an ellipsis: the shared one. */
export { firstLine } from '../../sidecar/protocol/format';

/** An ISO 8601 UTC time as "2026-03-12 09:15 UTC" (anything else as it is). */
export function when(iso: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return m ? `${m[1]} ${m[2]} UTC` : iso;
}

/** A tool call's JSON arguments as "key: value" lines (the content last); any other text as it is. */
export function readableMessage(msg: string): string {
  try {
    const o = JSON.parse(msg) as unknown;
    if (o && typeof o === 'object' && !Array.isArray(o)) {
      const entries = Object.entries(o as Record<string, unknown>).sort(
        ([a], [b]) => Number(a === 'content') - Number(b === 'content'),
      );
      return entries.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n');
    }
  } catch {
    /* not JSON: shown as it is */
  }
  return msg;
}

/**
 * The meta line of a file header: usage and entry count ("812/2200 chars · 5 entries · read-only"),
 * or for a broken file (MemoryFile.broken) "BROKEN (entries unknown; writes refused)" / "BROKEN (3
 * entries readable; writes refused)": never a count or usage it does not know.
 */
export function fileMeta(f: MemoryFile): string {
  const n = `${f.entries.length} ${f.entries.length === 1 ? 'entry' : 'entries'}`;
  if (f.broken) return `BROKEN (${f.entries.length ? `${n} readable` : 'entries unknown'}; writes refused)`;
  const usage = f.usage ? `${f.usage.chars}/${f.usage.limit} chars` : '';
  return [usage, n, f.readOnly ? 'read-only' : ''].filter(Boolean).join(' · ');
}

/** What a broken file's header says: "broken: <message>" and "Fix: <hint>"; undefined when not broken. */
export function brokenText(f: MemoryFile): { problem: string; fix?: string } | undefined {
  const b = f.broken;
  return b ? { problem: `broken: ${b.message}`, ...(b.hint ? { fix: `Fix: ${b.hint}` } : {}) } : undefined;
}

/** Warnings of a file header, without the ones that repeat its broken message (said once). */
export function fileWarnings(f: MemoryFile): string[] {
  return (f.warnings ?? []).filter((w) => !f.broken || !w.includes(f.broken.message));
}

/**
 * Why an entry cannot be edited or deleted here, or undefined when it can: Restricted Mode, its
 * file is broken (AgentKeep refuses to write it; the fix), or the file is read-only.
 */
export function writeBlockReason(file: MemoryFile, trusted: boolean): string | undefined {
  if (!trusted) {
    return (
      'Restricted Mode: this workspace is not trusted, so the memory inspector is read-only. ' +
      'Trust the workspace (Manage Workspace Trust) to edit or delete memory.'
    );
  }
  const b = file.broken;
  if (b) return `This file is broken, so AgentKeep does not write it: ${b.message}${b.hint ? ` Fix: ${b.hint}` : ''}`;
  return file.readOnly;
}

/**
 * The provenance line of a store whose history cannot be read (Provenance.unavailable): "provenance
 * unavailable: <what> — <fix>"; undefined when the history was read.
 */
export function provenanceUnavailable(p: Provenance): string | undefined {
  const u = p.unavailable;
  return u ? `provenance unavailable: ${u.message}${u.hint ? ` — ${u.hint}` : ''}` : undefined;
}

/**
 * What the list says when it shows no entry: the filters hide them, every file it could read is
 * empty (broken files are named above and counted here: not "no entries"), or no store is set.
 */
export function emptyListText(stores: readonly StoreView[], total: number): string {
  if (total) return `No entry matches the search and filters (${total} entries in all).`;
  if (!stores.length) return 'No memory store is configured. Set agentkeep.stores, e.g. ["hermes:/home/me/.hermes"].';
  const broken = stores.flatMap((s) => s.files).filter((f) => f.broken).length;
  const failed = stores.filter((s) => s.error).length;
  if (broken || failed) {
    const what = [
      broken ? `${broken} ${broken === 1 ? 'file is' : 'files are'} broken` : '',
      failed ? `${failed} ${failed === 1 ? 'store' : 'stores'} could not be read` : '',
    ];
    return `No entry could be read: ${what.filter(Boolean).join(' and ')} (see above). This is not an empty memory.`;
  }
  return 'The configured stores hold no memory entries yet.';
}

/** One row of the Timeline view: one entry through its edits (a replace continues its row). */
export interface TimelineRow {
  /** Row label: the entry's last text. */
  label: string;
  /** Writes of this entry, oldest first. */
  writes: MemoryWrite[];
  /** The entry is gone (its last write removed it). */
  gone: boolean;
}

/**
 * The Timeline view's rows (docs/memory-timeline.md): writes (oldest first, memory.history) folded
 * into one row per entry; a replace continues the row of the text it replaced, so an entry keeps
 * its row through its edits. Refused tool calls get their own marks on the row of their text.
 */
export function timelineRows(writes: MemoryWrite[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  const byText = new Map<string, TimelineRow>();
  const key = (store: string, t: string): string => `${store}\0${t.replace(/\s+/g, ' ').trim().toLowerCase()}`;
  for (const w of writes) {
    const from = w.before !== undefined ? byText.get(key(w.store, w.before)) : undefined;
    const to = w.after !== undefined ? byText.get(key(w.store, w.after)) : undefined;
    let row = from ?? to;
    if (!row) {
      row = { label: w.after ?? w.before ?? w.oldText ?? '(unknown text)', writes: [], gone: false };
      rows.push(row);
    }
    row.writes.push(w);
    if (w.refused) continue;
    if (w.after !== undefined) {
      if (w.before !== undefined && w.before !== w.after) byText.delete(key(w.store, w.before));
      byText.set(key(w.store, w.after), row);
      row.label = w.after;
      row.gone = false;
    } else if (w.action === 'remove') {
      row.gone = true;
    }
  }
  return rows;
}

/** The time span the Timeline draws (ms since epoch), padded so marks at the ends are not cut. */
export function timelineSpan(writes: MemoryWrite[]): { start: number; end: number } {
  const ts = writes.map((w) => (w.time ? Date.parse(w.time) : NaN)).filter((t) => !Number.isNaN(t));
  if (!ts.length) return { start: 0, end: 1 };
  const lo = Math.min(...ts);
  const hi = Math.max(...ts);
  const pad = Math.max(60_000, (hi - lo) * 0.04);
  return { start: lo - pad, end: hi + pad };
}

/** Who made a write, in words (the mark's title and the detail's first line). */
export function writeWho(w: MemoryWrite): string {
  switch (w.source) {
    case 'agent':
      return `the agent's memory tool${w.session ? ` (session ${w.session})` : ''}`;
    case 'hook':
      return `the agent's memory tool, seen by the agent hook${w.session ? ` (session ${w.session})` : ''}`;
    case 'agentkeep':
      return `AgentKeep (${w.why ?? 'memory write'})`;
    default:
      return `seen between restore points (${w.restorePoint ?? ''})`;
  }
}
