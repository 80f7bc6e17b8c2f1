/**
 * File and entry rules of the memory lint: over budget, hand-edit drift, untraceable entries, stale
 * claims, age, and store warnings. Pure functions over the input model (model.ts).
 */
import * as path from 'node:path';
import type { LintFinding } from '../../protocol';
import { binaryOf, extractClaims, versionAgrees } from './claims';
import type { LintEntry, LintFile, LintStore, MachineFacts } from './model';
import { quote } from './text';

/** Hermes's entry delimiter (tools/memory_tool.py ENTRY_DELIMITER). */
const DELIM = '\n§\n';
const HERMES_KINDS = new Set(['hermes-memory', 'hermes-user']);

/**
 * "MEMORY.md #3"; for the files of a store that keeps several areas in one file (Agent Zero: every
 * area in index.pkl, kind agent-zero-<area>) the area too: "index.pkl (area fragments) #1".
 */
export function where(file: LintFile, idx: number): string {
  const area = file.kind.startsWith('agent-zero-') ? file.kind.slice('agent-zero-'.length) : undefined;
  return `${path.basename(file.file)}${area ? ` (area ${area})` : ''} #${idx + 1}`;
}

/**
 * File kinds the store never traces to a write, so "no trace" says nothing: Hermes SOUL.md (hand
 * written), skills (skill_manage or by hand), the eviction archive; Agent Zero areas (Agent Zero keeps
 * no history: its entries carry only their own metadata, and knowledge imports come from files).
 */
export function neverTraced(kind: string): boolean {
  return (
    kind === 'hermes-soul' || kind === 'hermes-skill' || kind === 'hermes-archive' || kind.startsWith('agent-zero-')
  );
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * Over budget: usage.chars > usage.limit. For Hermes (tools/memory_tool.py; reference §1.2–1.3) the
 * consequences are stated: `memory add` is refused over budget (memory_tool.py @029cfb25 returns an
 * error listing current_entries; versions documented with ARCHIVE.jsonl evict the oldest entries to
 * memories/ARCHIVE.jsonl instead), and the prompt renders the file head/tail-truncated. Entries
 * listed are those overlapping the middle that an even head/tail split of the limit would cut
 * (the exact split is not verified, so the message says "about").
 */
export function overBudget(store: string, file: LintFile): LintFinding[] {
  const u = file.usage;
  if (!u || u.chars <= u.limit) return [];
  const name = path.basename(file.file);
  const over = u.chars - u.limit;
  const pct = Math.round((u.chars / u.limit) * 100);
  const hermes = HERMES_KINDS.has(file.kind);
  // Estimate the cut: keep the first and the last limit/2 chars of "\n§\n".join(entries).
  const cutFrom = Math.floor(u.limit / 2);
  const cutTo = u.chars - Math.ceil(u.limit / 2);
  const cut: string[] = [];
  let pos = 0;
  for (const e of file.entries) {
    const len = [...e.text].length;
    if (pos < cutTo && pos + len > cutFrom) cut.push(e.id);
    pos += len + DELIM.length;
  }
  const message = hermes
    ? `${name} is over budget: ${fmt(u.chars)} of ${fmt(u.limit)} chars (${pct}%). Hermes refuses every new \`memory add\` to it (newer versions instead evict the oldest entries to memories/ARCHIVE.jsonl), and renders it head/tail-truncated in the system prompt, so about ${fmt(over)} chars in the middle never reach the model.`
    : `${name} is over budget: ${fmt(u.chars)} of ${fmt(u.limit)} chars (${pct}%).`;
  return [
    {
      kind: 'over-budget',
      severity: 'error',
      entries: cut,
      stores: [store],
      message,
      evidence: [
        `usage ${fmt(u.chars)} chars = len("\\n§\\n".join(entries)) over ${file.entries.length} entries; limit ${fmt(u.limit)}${hermes ? ` (config.yaml memory.${file.kind === 'hermes-user' ? 'user' : 'memory'}_char_limit)` : ''}`,
        ...(hermes && cut.length ? [`entries in the truncated middle (estimate): ${cut.length}`] : []),
      ],
      suggestion: `Remove or shorten entries to free at least ${fmt(over)} chars (start with duplicates and stale entries), or raise the limit in config.yaml.`,
    },
  ];
}

/**
 * Hand-edit drift of a Hermes file (the read-back checks need `raw`; the entry length check does not):
 * 1. Hermes's own drift guard (memory_tool.py, added for hermes-agent#26045): raw.strip() must equal
 *    "\n§\n".join(parsed entries), and no entry may exceed the char limit; otherwise Hermes refuses
 *    `replace`/`remove` and writes MEMORY.md.bak.<ts>.
 * 2. What that guard misses: a hand-appended paragraph without the delimiter is absorbed into the
 *    last entry (a blank line inside an entry), and a "§" line with extra spaces is not a delimiter.
 */
export function drift(store: string, file: LintFile): LintFinding[] {
  if (!HERMES_KINDS.has(file.kind)) return [];
  const name = path.basename(file.file);
  const text = (file.raw ?? '').replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  const parsed = text
    .split(DELIM)
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
  const evidence: string[] = [];
  const ids = new Set<string>();
  let guard = false;
  // Without the raw text only the entry-length half of the guard can be checked.
  if (file.raw !== undefined && text.trim() !== parsed.join(DELIM)) {
    guard = true;
    const pieces = text.split(DELIM);
    const blank =
      pieces.slice(0, -1).some((p, i) => i > 0 && p.trim() === '') ||
      (pieces.length > 1 && pieces[0].trim() === '' && text.trim() !== '');
    const padded = pieces.some((p) => p.trim() !== '' && p !== p.trim() && pieces.length > 1);
    if (blank) evidence.push('an empty entry between two "§" delimiters');
    if (padded) {
      const idx = pieces.findIndex((p) => p.trim() !== '' && p !== p.trim());
      evidence.push(`whitespace around a "§" delimiter (next to ${quote(pieces[idx], 60)})`);
    }
    if (!blank && !padded) evidence.push('the file does not read back as "\\n§\\n".join(entries)');
  }
  const limit = file.usage?.limit;
  file.entries.forEach((e, i) => {
    if (limit !== undefined && [...e.text].length > limit) {
      guard = true;
      ids.add(e.id);
      evidence.push(`${where(file, i)} alone is ${[...e.text].length} chars, over the ${limit}-char limit`);
    }
  });
  const findings: LintFinding[] = [];
  if (guard) {
    findings.push({
      kind: 'drift',
      severity: 'warning',
      entries: [...ids],
      stores: [store],
      message: `${name} was edited outside Hermes and no longer reads back as its entries: Hermes's drift guard will refuse the next memory replace/remove on it and leave ${name}.bak.<time>.`,
      evidence,
      suggestion: `Re-save ${name} with entries separated by a line holding only "§" (no spaces, no empty entries), e.g. by editing one of its entries through AgentKeep (memory edit), which writes the file back that way.`,
    });
  }
  // What Hermes's guard does not see.
  const absorbed: string[] = [];
  const ev2: string[] = [];
  file.entries.forEach((e, i) => {
    const lines = e.text.split('\n');
    const fake = lines.findIndex((l) => /^\s*§\s*$/.test(l));
    if (fake >= 0) {
      absorbed.push(e.id);
      ev2.push(
        `${where(file, i)} line ${fake + 1} is a "§" with spaces or blank lines around it, which is not Hermes's delimiter "\\n§\\n": both sides are one entry`,
      );
      return;
    }
    const m = /\n[ \t]*\n[ \t]*(\S[^\n]*)/.exec(e.text);
    if (m) {
      absorbed.push(e.id);
      const hand = /^(#{1,6}\s|[-*+]\s|>\s|\d+[.)]\s|---)/.test(m[1]);
      ev2.push(
        `${where(file, i)} contains a blank line followed by ${hand ? 'Markdown' : 'text'} ${quote(m[1], 60)}: text appended without the "§" delimiter is read as part of this entry`,
      );
    }
  });
  if (absorbed.length) {
    findings.push({
      kind: 'drift',
      severity: 'warning',
      entries: absorbed,
      stores: [store],
      message: `${name} has text that was probably added by hand (or by a shell/patch tool) without the "§" delimiter; Hermes reads it as part of another entry, and its own drift check does not notice.`,
      evidence: ev2,
      suggestion: 'Split the appended text into its own entry (a line with only "§" before it), or remove it.',
    });
  }
  return findings;
}

/**
 * Untraceable: the store's history exists and no write of this entry is on record. Not for kinds the
 * store never traces (neverTraced: skills, SOUL.md, the archive, Agent Zero areas).
 */
export function untraceable(store: string, file: LintFile): LintFinding[] {
  const out: LintFinding[] = [];
  if (neverTraced(file.kind)) return out;
  file.entries.forEach((e, i) => {
    if (e.provenance?.traced !== false) return;
    out.push({
      kind: 'untraceable',
      severity: 'info',
      entries: [e.id],
      stores: [store],
      message: `No tool call in the session history wrote ${where(file, i)} ${quote(e.text, 80)}: it was edited by hand, written by another tool (cron, shell, patch), or its session was deleted.`,
      evidence: [e.provenance.note ?? 'provenance: no trace'],
      suggestion: 'Check with whoever edits this store that it is true and still wanted; correct or remove it if not.',
    });
  });
  return out;
}

/** When an entry last changed (ms), where known. */
export function entryTime(e: LintEntry): number | undefined {
  const t = Date.parse(e.updatedAt ?? e.createdAt ?? '');
  return Number.isFinite(t) ? t : undefined;
}

/** Age: entries whose last change is older than maxAgeDays (info). */
export function age(store: string, file: LintFile, now: number, maxAgeDays: number): LintFinding[] {
  const out: LintFinding[] = [];
  file.entries.forEach((e, i) => {
    const t = entryTime(e);
    if (t === undefined) return;
    const days = Math.floor((now - t) / 86_400_000);
    if (days <= maxAgeDays) return;
    out.push({
      kind: 'age',
      severity: 'info',
      entries: [e.id],
      stores: [store],
      message: `${where(file, i)} ${quote(e.text, 80)} was last changed ${days} days ago (more than ${maxAgeDays}).`,
      evidence: [`${e.updatedAt ? 'updatedAt' : 'createdAt'} ${new Date(t).toISOString()}`],
      suggestion: 'Check that it still holds; remove or update it if not.',
    });
  });
  return out;
}

/**
 * Stale: claims of the entry (claims.ts) that disagree with the machine facts. Only claims that
 * were probed are judged; an unprobed claim is never a finding.
 */
export function stale(store: string, file: LintFile, m: MachineFacts): LintFinding[] {
  const out: LintFinding[] = [];
  file.entries.forEach((e, i) => {
    const problems: string[] = [];
    for (const c of extractClaims(e.text)) {
      if (c.kind === 'path') {
        const f = m.paths?.[c.key];
        if (f && !f.exists)
          problems.push(`${c.key} does not exist on ${m.where}${f.checked !== c.key ? ` (checked ${f.checked})` : ''}`);
      } else if (c.kind === 'command') {
        const f = m.commands?.[binaryOf(c.key)];
        if (f && !f.found)
          problems.push(
            `command "${binaryOf(c.key)}" (${c.raw}) is not installed on ${m.where}${f.detail ? ` (${f.detail})` : ''}`,
          );
      } else if (c.kind === 'version') {
        const f = m.commands?.[binaryOf(c.key)];
        if (!f) continue;
        if (!f.found) problems.push(`"${c.raw}": ${binaryOf(c.key)} is not installed on ${m.where}`);
        else if (f.version && !versionAgrees(c.version, f.version)) {
          problems.push(`"${c.raw}" but ${m.where} has ${c.key} ${f.version}${f.detail ? ` (${f.detail})` : ''}`);
        }
      } else if (c.kind === 'os') {
        const os = m.os;
        if (!os) continue;
        if (os.id !== c.key) problems.push(`"${c.raw}" but ${m.where} runs ${os.id} ${os.versionId ?? ''}`.trim());
        else if (os.versionId && !versionAgrees(c.version, os.versionId))
          problems.push(`"${c.raw}" but ${m.where} runs ${os.id} ${os.versionId}${os.detail ? ` (${os.detail})` : ''}`);
      }
    }
    if (!problems.length) return;
    out.push({
      kind: 'stale',
      severity: 'warning',
      entries: [e.id],
      stores: [store],
      message: `${where(file, i)} ${quote(e.text, 80)} disagrees with ${m.where}: ${problems[0]}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}.`,
      evidence: problems,
      suggestion:
        'Update the entry to what the machine has now, or remove it; if it describes another machine, say which one in the entry.',
    });
  });
  return out;
}

/**
 * Hermes reader warnings about hand edits and drift: the drift rule reports the same facts from the
 * raw text, with evidence, so they are not repeated as store findings.
 */
const COVERED_BY_DRIFT = [/^Drift: /, /^Changed outside Hermes' memory tool: /];

/**
 * The file a broken-store finding names first: the one the problem's message starts with (Agent
 * Zero's subdir is listed as its index.pkl, but "usr/memory/default/index.faiss is damaged" is about
 * index.faiss; a store nothing of which could be read is listed as its directory), else `file`'s name.
 */
function brokenName(file: string, message: string): string {
  const first = /^(?:Cannot read |SQLite database )?(\S*\/)?([\w.-]+\.[\w]+)\b/.exec(message);
  return first ? first[2] : path.basename(file);
}

/**
 * Store warnings from the adapter (non-durable config, embedding model mismatch ...), and one error
 * per broken file (LintFile.broken: what is broken, the fix; its warnings that repeat it are left out).
 */
export function storeWarnings(s: LintStore): LintFinding[] {
  const TRUST = 'the store cannot be trusted as it is';
  const UNREAD = 'its entries could not be read or checked (the file is not empty)';
  const out: LintFinding[] = [];
  const seen = new Set<string>();
  for (const f of s.files) {
    const b = f.broken;
    if (b && !seen.has(b.message)) {
      seen.add(b.message); // Agent Zero: one broken subdir marks each of its area files
      out.push({
        kind: 'store',
        severity: 'error',
        entries: [],
        stores: [s.store],
        message: `${brokenName(f.file, b.message)} is broken, so ${f.entries.length ? TRUST : UNREAD}: ${b.message}`,
        evidence: [f.file],
        ...(b.hint ? { suggestion: b.hint } : {}),
      });
    }
    for (const w of f.warnings ?? []) {
      if (seen.has(w)) continue; // one store-wide warning repeated per file
      if (b && w.includes(b.message)) continue;
      if (f.raw !== undefined && COVERED_BY_DRIFT.some((re) => re.test(w))) continue;
      seen.add(w);
      out.push({
        kind: 'store',
        severity: 'warning',
        entries: [],
        stores: [s.store],
        message: `${path.basename(f.file)}: ${w}`,
        evidence: [f.file],
      });
    }
  }
  return out;
}
