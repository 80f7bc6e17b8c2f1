/**
 * Read the memory of a Hermes home into MemoryFiles, from any file source: the live home on disk,
 * or an agent-state capture in a restore point (memory.diff). Files (shared/reference/memory-stores.md §1):
 *   - memories/MEMORY.md (area memory), memories/USER.md (area user): entries split on "\n§\n",
 *     usage against the config.yaml char limits, the drift check Hermes runs before a write;
 *   - SOUL.md (area soul, read-only here): one entry per paragraph or list item, headings skipped;
 *   - memories/ARCHIVE.jsonl (area archive, read-only; the docs version evicts the oldest entries
 *     there): one entry per JSON line, bad lines reported as warnings;
 *   - skills/<category>/<skill>/SKILL.md (area skill, read-only): one entry per skill, text
 *     "name: description" from the YAML front matter, the whole front matter in meta;
 *   - pending/memory/<id>.json (area pending, read-only; MemoryFile.pending): the memory writes Hermes
 *     staged for approval when `memory.write_approval` is on, one entry per record (readPending).
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { MemoryEntry, MemoryFile, StoreProblem } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import { describeOffset, firstInvalidUtf8, problemOf } from '../broken';

/** Hermes's entry delimiter. */
export const ENTRY_DELIMITER = '\n§\n';
/** Default char limits (Hermes tools/memory_tool.py). */
export const DEFAULT_MEMORY_CHAR_LIMIT = 2200;
export const DEFAULT_USER_CHAR_LIMIT = 1375;

/** Read one root-relative POSIX path (undefined when absent) and list files under a prefix. */
export interface FileSource {
  read(rel: string): Promise<Buffer | undefined>;
  /** Root-relative POSIX paths of the files under `dir` (recursive), any order. */
  list(dir: string): Promise<string[]>;
  /** Absolute path (or `<store>:<rel>` for a capture) shown for `rel`. */
  display(rel: string): string;
}

/**
 * Split the text of a Hermes memory file into entries: a UTF-8 BOM dropped, CRLF normalised to LF, split on "\n§\n",
 * each entry trimmed (Python str.strip semantics: whitespace), empties dropped.
 */
export function parseEntries(raw: string): string[] {
  const text = normaliseRaw(raw);
  return text
    .split(ENTRY_DELIMITER)
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
}

/** BOM dropped, CRLF -> LF. */
export function normaliseRaw(raw: string): string {
  return raw.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
}

/** Usage in characters, as Hermes counts it: length of the entries joined by "\n§\n" (code points, as Python len()). */
export function usageChars(entries: string[]): number {
  return [...entries.join(ENTRY_DELIMITER)].length;
}

/** Entry id: first 12 hex chars of sha256 of the entry text (UTF-8). */
export function entryId(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12);
}

/** sha256 (hex) of raw bytes; the compare-and-swap token of a file (sha256 of "" for a missing file). */
export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Hermes' drift rule (tools/memory_tool.py, added for hermes-agent#26045): the file drifted when it
 * does not parse back to itself, i.e. raw.strip() != "\n§\n".join(parse(raw)), or when one entry
 * alone exceeds the char limit. Returns the reason, or undefined when there is no drift.
 */
export function driftReason(raw: string, limit: number): string | undefined {
  const entries = parseEntries(raw);
  if (normaliseRaw(raw).trim() !== entries.join(ENTRY_DELIMITER)) {
    return "the file no longer parses back to its entries (whitespace or delimiters were changed outside Hermes' memory tool)";
  }
  const big = entries.find((e) => [...e].length > limit);
  if (big) return `one entry alone (${[...big].length} chars) exceeds the ${limit}-char limit`;
  return undefined;
}

/**
 * Signs that a file was changed outside Hermes' memory tool although Hermes' own drift rule passes
 * (hermes-agent#26045: an appended paragraph without "§" is absorbed into the last entry):
 * a trailing newline or a markdown heading after a blank line inside an entry.
 */
export function handEditSigns(raw: string): string[] {
  const out: string[] = [];
  const text = normaliseRaw(raw);
  if (text.length && text !== text.trim())
    out.push('leading or trailing whitespace (Hermes writes none): the file was saved by an editor or appended to');
  for (const e of parseEntries(raw)) {
    if (/\n\s*\n#{1,6} /.test(e) || /\n\s*\n- /.test(e)) {
      out.push(
        `entry ${entryId(e)} contains a blank line followed by a heading or list: text appended without the "§" delimiter was absorbed into it`,
      );
    }
  }
  return out;
}

/** Char limits of a Hermes home. */
export interface HermesLimits {
  memory: number;
  user: number;
}

/**
 * The char limits from config.yaml text (`memory.memory_char_limit`, `memory.user_char_limit`). A
 * missing or broken config (or a value that is not a positive integer) falls back to the defaults.
 */
export function limitsFromConfig(raw: string | undefined): HermesLimits {
  const limits: HermesLimits = { memory: DEFAULT_MEMORY_CHAR_LIMIT, user: DEFAULT_USER_CHAR_LIMIT };
  if (raw === undefined) return limits;
  let doc: unknown;
  try {
    doc = parseYaml(raw);
  } catch {
    return limits;
  }
  if (!doc || typeof doc !== 'object') return limits;
  const mem = (doc as Record<string, unknown>).memory;
  if (!mem || typeof mem !== 'object') return limits;
  const m = mem as Record<string, unknown>;
  const pick = (v: unknown, dflt: number): number => {
    const n = typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v;
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : dflt;
  };
  limits.memory = pick(m.memory_char_limit, limits.memory);
  limits.user = pick(m.user_char_limit, limits.user);
  return limits;
}

/** config.yaml of a Hermes home as read: the char limits, and why they are the defaults when it cannot be used. */
export interface HermesConfig {
  limits: HermesLimits;
  /** config.yaml exists but does not parse or cannot be read: what, where (line), the fix. */
  problem?: StoreProblem;
  /** The short form for usage, e.g. "config.yaml does not parse". */
  short?: string;
}

/**
 * Read `config.yaml` from `src`: its char limits (limitsFromConfig), and when it exists but cannot be
 * used, the problem. As Hermes (hermes_cli/config.py _warn_config_parse_failure: "Falling back to
 * default config — every user override … is being IGNORED"), a config that does not parse means the
 * defaults; it is a warning, not a broken store. Never throws for a bad config.
 */
export async function readHermesConfig(src: FileSource): Promise<HermesConfig> {
  const shown = src.display('config.yaml');
  const defaults = limitsFromConfig(undefined);
  const dflt = `memory_char_limit ${defaults.memory}, user_char_limit ${defaults.user}`;
  let raw: Buffer | undefined;
  try {
    raw = await src.read('config.yaml');
  } catch (e) {
    if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e; // the connection: not the config
    const why = e.message.replace(/: Hermes .*$/s, '').replace(/\.$/, '');
    return {
      limits: defaults,
      short: 'config.yaml cannot be read',
      problem: {
        code: 'file_error',
        message: `Hermes' config cannot be read: ${why}. Hermes then runs on its defaults (${dflt}).`,
        hint: `Move it away (mv ${shown} ${shown}.moved) and put Hermes' config.yaml back (e.g. from backups/config/ in the home, or hermes setup).`,
      },
    };
  }
  if (raw === undefined) return { limits: defaults };
  const text = raw.toString('utf8');
  try {
    parseYaml(text);
  } catch (e) {
    const err = e as Error & { linePos?: Array<{ line: number; col: number }> };
    const at = err.linePos?.[0];
    const first = err.message.split('\n')[0].replace(/:$/, '');
    return {
      limits: defaults,
      short: 'config.yaml does not parse',
      problem: {
        code: 'file_error',
        message:
          `${shown} does not parse as YAML (${first}): Hermes ignores every setting in it and falls back to its ` +
          `defaults (${dflt}), so these are the limits shown.`,
        hint:
          `Fix the YAML${at ? ` at line ${at.line}` : ''} (hermes config edit, or any editor): check the brackets, quotes ` +
          'and indentation there.',
      },
    };
  }
  return { limits: limitsFromConfig(text) };
}

/** SOUL.md paragraphs and list items (headings and blank lines separate; headings are not entries). */
export function soulEntries(raw: string): string[] {
  const out: string[] = [];
  let para: string[] = [];
  const flush = (): void => {
    const t = para.join('\n').trim();
    if (t) out.push(t);
    para = [];
  };
  for (const line of normaliseRaw(raw).split('\n')) {
    if (!line.trim() || /^#{1,6}\s/.test(line)) {
      flush();
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line) && !/^\s{2,}/.test(line)) {
      flush();
      para.push(line.replace(/^\s*([-*+]|\d+[.)])\s+/, ''));
      continue;
    }
    para.push(line);
  }
  flush();
  return out;
}

/** Front matter of a SKILL.md (the YAML between the leading `---` lines), or undefined. */
export function skillFrontMatter(raw: string): Record<string, unknown> | undefined {
  const m = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\s*(\r?\n|$)/.exec(raw);
  if (!m) return undefined;
  try {
    const doc = parseYaml(m[1]) as unknown;
    return doc && typeof doc === 'object' && !Array.isArray(doc) ? (doc as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const ARCHIVE_TEXT_KEYS = ['content', 'text', 'entry', 'memory'];
const ARCHIVE_TIME_KEYS = ['evicted_at', 'archived_at', 'timestamp', 'time', 'created_at'];

/** ISO 8601 UTC from a unix time (seconds or ms) or a date string; undefined when not a time. */
export function isoTime(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return new Date(v > 1e12 ? v : v * 1000).toISOString();
  if (typeof v === 'string' && v.trim()) {
    const t = Date.parse(v);
    if (Number.isFinite(t)) return new Date(t).toISOString();
  }
  return undefined;
}

/** Read-only reasons per area. */
export const READ_ONLY: Record<string, string> = {
  soul: "SOUL.md is the agent's persona, written by hand: edit it in an editor (AgentKeep offers a restore point first)",
  archive: 'ARCHIVE.jsonl holds entries Hermes evicted from MEMORY.md; it is a log, not edited from AgentKeep',
  skill: 'Skills are edited by the agent (skill_manage) or in an editor; AgentKeep shows them read-only',
  pending:
    'A write the agent staged for approval (memory.write_approval): it is not in memory yet. Approve or reject it in ' +
    'Hermes (/memory approve <id> or /memory reject <id>); AgentKeep shows it read-only',
};

/** Where Hermes stages memory writes for approval, relative to the home (tools/write_approval.py _pending_path). */
export const PENDING_MEMORY_DIR = 'pending/memory';

/**
 * One staged memory write as Hermes records it (NousResearch/hermes-agent tools/write_approval.py
 * stage_write @ 00067189: `{id, subsystem, action, summary, origin, created_at (unix s), payload}`;
 * payload = the memory tool's kwargs, tools/memory_tool.py _apply_write_gate / _apply_batch_write_gate
 * @ 029cfb25: `{action: add|replace|remove, target, content, old_text}` or `{action: "batch", target,
 * operations: [{action, content?, old_text?}]}`), as an entry: id = the pending id (the file name
 * without .json, which is what `/memory approve <id>` takes), text = what the write would store
 * (add/replace: content; remove: old_text; batch: one line per operation), createdAt = created_at.
 * Returns undefined (and a warning) for a record that is not a staged memory write.
 */
export function pendingEntry(
  rel: string,
  raw: Buffer,
  file: string,
  spec: string,
  warnings: string[],
): MemoryEntry | undefined {
  const name = path.posix.basename(rel, '.json');
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, '')); // Hermes reads utf-8-sig
  } catch {
    warnings.push(`${rel} is not JSON: Hermes skips it too ("Skipping unreadable pending record"); not shown.`);
    return undefined;
  }
  const o = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  const payload = o?.payload && typeof o.payload === 'object' ? (o.payload as Record<string, unknown>) : undefined;
  if (!o || !payload) {
    warnings.push(`${rel} has no payload (expected Hermes' {id, action, payload, created_at}); not shown.`);
    return undefined;
  }
  const str = (x: unknown): string | undefined => (typeof x === 'string' && x ? x : undefined);
  const action = str(payload.action) ?? str(o.action) ?? '?';
  const target = payload.target === 'user' ? 'user' : 'memory';
  const ops = Array.isArray(payload.operations)
    ? payload.operations
        .filter((x): x is Record<string, unknown> => !!x && typeof x === 'object')
        .map((x) => ({
          action: str(x.action) ?? '?',
          ...(str(x.content) ? { content: str(x.content) } : {}),
          ...(str(x.old_text) ? { oldText: str(x.old_text) } : {}),
        }))
    : undefined;
  const text =
    action === 'batch'
      ? (ops ?? [])
          .map((op) =>
            op.action === 'replace'
              ? `replace: ${op.oldText ?? ''} -> ${op.content ?? ''}`
              : `${op.action}: ${op.action === 'remove' ? (op.oldText ?? '') : (op.content ?? '')}`,
          )
          .join('\n')
      : ((action === 'remove' ? str(payload.old_text) : str(payload.content)) ?? str(o.summary) ?? '');
  const time = isoTime(o.created_at);
  return {
    id: name,
    text,
    store: spec,
    file,
    area: 'pending',
    ...(time ? { createdAt: time } : {}),
    ...(str(o.origin) ? { source: str(o.origin) } : {}),
    meta: {
      pendingId: str(o.id) ?? name,
      action,
      target,
      ...(str(payload.content) && action !== 'batch' ? { content: str(payload.content) } : {}),
      ...(str(payload.old_text) ? { oldText: str(payload.old_text) } : {}),
      ...(ops ? { operations: ops } : {}),
      ...(str(o.summary) ? { summary: str(o.summary) } : {}),
      ...(str(o.origin) ? { origin: str(o.origin) } : {}),
      path: rel,
    },
  };
}

function mk(area: string, text: string, file: string, spec: string, extra: Partial<MemoryEntry> = {}): MemoryEntry {
  // memory/user ids are the plain text hash (stable across tools); other areas are namespaced so the
  // same sentence in SOUL.md and MEMORY.md gets two ids
  const id = area === 'memory' || area === 'user' ? entryId(text) : entryId(`${area}\0${text}`);
  return { id, text, store: spec, file, area, ...extra };
}

/**
 * The error for a Hermes memory file that is not valid UTF-8. Hermes reads MEMORY.md and USER.md
 * with `path.read_text(encoding="utf-8")` and catches only OSError (NousResearch/hermes-agent
 * tools/memory_tool.py @ 029cfb25, MemoryStore._read_file), so the UnicodeDecodeError ends its
 * memory load: Hermes refuses the file. AgentKeep does the same: no entries decoded with U+FFFD, and
 * no write (which would store the U+FFFD replacements for good).
 */
export function invalidUtf8Error(file: string, raw: Buffer, offset: number): AgentKeepError {
  return new AgentKeepError(
    'FileError',
    `${file} is not valid UTF-8: the first bad byte sequence is at ${describeOffset(raw, offset)}. Hermes reads this ` +
      'file as strict UTF-8 and fails to load it, so its entries are not shown, and AgentKeep does not write it ' +
      '(that would turn the bad bytes into U+FFFD for good).',
    `Fix the bytes at that offset in an editor that shows them (iconv -f UTF-8 -t UTF-8 ${file} >/dev/null names the ` +
      'position) and save as UTF-8, or restore the file from a restore point (scope agent).',
  );
}

/** The warning for a read-only file (SOUL.md, ARCHIVE.jsonl) that is not valid UTF-8: shown with U+FFFD. */
function utf8Warning(raw: Buffer): string[] {
  const bad = firstInvalidUtf8(raw);
  if (bad === undefined) return [];
  return [`Not valid UTF-8 (first bad byte sequence at ${describeOffset(raw, bad)}): bad bytes are shown as U+FFFD.`];
}

/** One memory file as read, with its raw bytes (for the compare-and-swap hash). */
export interface ReadFile {
  file: MemoryFile;
  /** Root-relative POSIX path. */
  rel: string;
  raw?: Buffer;
  /**
   * Why the file could not be read or is broken (unreadable, a directory, not valid UTF-8): it is
   * listed with no entries, `broken` and a warning; writes to it rethrow this.
   */
  error?: Error;
}

/**
 * Read every memory file of a Hermes home from `src`: MEMORY.md and USER.md always (zero entries
 * when absent), SOUL.md, ARCHIVE.jsonl and each SKILL.md when present. Never throws for bad content
 * (warnings instead). A file that cannot be read or is broken (`src.read` throws a FileError: a
 * directory, a dangling symlink, no permission; or MEMORY.md / USER.md not valid UTF-8, see
 * invalidUtf8Error) is listed with no entries, `broken` and a warning, never as empty; only when no
 * file at all could be read is its error thrown.
 */
export async function readHome(src: FileSource, spec: string): Promise<ReadFile[]> {
  const config = await readHermesConfig(src); // unusable config: default limits, said on MEMORY.md and USER.md
  const limits = config.limits;
  const out: ReadFile[] = [];
  // One unreadable or broken memory file (e.g. USER.md mode 000) does not hide the others: it is
  // listed as broken (no entries, `broken`, a warning); only when every memory file fails is the error thrown.
  const errors: Error[] = [];
  let readable = 0;
  const tryRead = async (rel: string): Promise<{ raw?: Buffer; error?: Error }> => {
    try {
      const raw = await src.read(rel);
      if (raw) readable++;
      return { raw };
    } catch (e) {
      if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e; // e.g. a corrupt capture: not a per-file problem
      errors.push(e);
      return { error: e };
    }
  };
  const unreadable = (e: Error): string => `Cannot read this file, so its entries are not shown: ${e.message}`;
  for (const [kind, area, rel, limit] of [
    ['hermes-memory', 'memory', 'memories/MEMORY.md', limits.memory],
    ['hermes-user', 'user', 'memories/USER.md', limits.user],
  ] as const) {
    const read = await tryRead(rel);
    let { raw, error } = read;
    const file = src.display(rel);
    const bad = raw ? firstInvalidUtf8(raw) : undefined;
    if (raw && bad !== undefined) {
      error = invalidUtf8Error(file, raw, bad);
      errors.push(error);
      readable--;
      raw = undefined;
    }
    const text = raw?.toString('utf8') ?? '';
    const entries = parseEntries(text);
    const warnings: string[] = error ? [unreadable(error)] : [];
    if (config.problem)
      warnings.push(`Char limit: ${config.problem.message}${config.problem.hint ? ` ${config.problem.hint}` : ''}`);
    const drift = raw ? driftReason(text, limit) : undefined;
    if (drift)
      warnings.push(
        `Drift: ${drift}. Hermes refuses to replace or remove entries until it is fixed (it keeps a .bak).`,
      );
    if (raw) warnings.push(...handEditSigns(text).map((s) => `Changed outside Hermes' memory tool: ${s}.`));
    out.push({
      rel,
      raw,
      ...(error ? { error } : {}),
      file: {
        kind,
        file,
        store: spec,
        entries: entries.map((t) => mk(area, t, file, spec)),
        // a broken file's usage is unknown (not 0): no usage, `broken` instead
        ...(error
          ? {}
          : {
              usage: {
                chars: usageChars(entries),
                limit,
                ...(config.short ? { limitNote: `default limit: ${config.short}` } : {}),
              },
            }),
        ...(warnings.length ? { warnings } : {}),
        ...(error ? { broken: problemOf(error) } : {}),
      },
    });
  }
  const { raw: soul, error: soulError } = await tryRead('SOUL.md');
  if (soulError) {
    const file = src.display('SOUL.md');
    const warnings = [unreadable(soulError)];
    const broken = problemOf(soulError);
    const mf = { kind: 'hermes-soul', file, store: spec, entries: [], readOnly: READ_ONLY.soul, warnings, broken };
    out.push({ rel: 'SOUL.md', error: soulError, file: mf });
  }
  if (soul) {
    const file = src.display('SOUL.md');
    const warnings = utf8Warning(soul);
    const entries = soulEntries(soul.toString('utf8')).map((t) => mk('soul', t, file, spec));
    const w = warnings.length ? { warnings } : {};
    const mf = { kind: 'hermes-soul', file, store: spec, entries, readOnly: READ_ONLY.soul, ...w };
    out.push({ rel: 'SOUL.md', raw: soul, file: mf });
  }
  const { raw: archive, error: archiveError } = await tryRead('memories/ARCHIVE.jsonl');
  if (archiveError) {
    const file = src.display('memories/ARCHIVE.jsonl');
    const warnings = [unreadable(archiveError)];
    const broken = problemOf(archiveError);
    const readOnly = READ_ONLY.archive;
    const mf = { kind: 'hermes-archive', file, store: spec, entries: [], readOnly, warnings, broken };
    out.push({ rel: 'memories/ARCHIVE.jsonl', error: archiveError, file: mf });
  }
  if (archive) {
    const file = src.display('memories/ARCHIVE.jsonl');
    const entries: MemoryEntry[] = [];
    const warnings: string[] = utf8Warning(archive);
    archive
      .toString('utf8')
      .split(/\r?\n/)
      .forEach((line, i) => {
        if (!line.trim()) return;
        let v: unknown;
        try {
          v = JSON.parse(line);
        } catch {
          warnings.push(`ARCHIVE.jsonl line ${i + 1} is not JSON; skipped.`);
          return;
        }
        const o = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
        const text =
          typeof v === 'string'
            ? v
            : (ARCHIVE_TEXT_KEYS.map((k) => o?.[k]).find((x) => typeof x === 'string') as string | undefined);
        if (!text?.trim()) {
          warnings.push(`ARCHIVE.jsonl line ${i + 1} has no entry text (expected a string or {content}); skipped.`);
          return;
        }
        const time = ARCHIVE_TIME_KEYS.map((k) => isoTime(o?.[k])).find(Boolean);
        entries.push(
          mk('archive', text.trim(), file, spec, {
            ...(time ? { updatedAt: time } : {}),
            meta: { line: i + 1, ...(o ? { record: o } : {}) },
          }),
        );
      });
    out.push({
      rel: 'memories/ARCHIVE.jsonl',
      raw: archive,
      file: {
        kind: 'hermes-archive',
        file,
        store: spec,
        entries,
        readOnly: READ_ONLY.archive,
        ...(warnings.length ? { warnings } : {}),
      },
    });
  }
  const pendingRels = (await src.list(PENDING_MEMORY_DIR))
    .filter((r) => path.posix.dirname(r) === PENDING_MEMORY_DIR && r.endsWith('.json'))
    .sort();
  if (pendingRels.length) {
    const file = src.display(PENDING_MEMORY_DIR);
    const entries: MemoryEntry[] = [];
    const warnings: string[] = [];
    for (const rel of pendingRels) {
      const { raw, error } = await tryRead(rel);
      if (error) warnings.push(`${rel}: ${unreadable(error)}`);
      const e = raw ? pendingEntry(rel, raw, src.display(rel), spec, warnings) : undefined;
      if (e) entries.push(e);
    }
    // oldest first, as Hermes' list_pending sorts them (by created_at)
    entries.sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.id.localeCompare(b.id));
    out.push({
      rel: PENDING_MEMORY_DIR,
      file: {
        kind: 'hermes-pending',
        file,
        store: spec,
        entries,
        readOnly: READ_ONLY.pending,
        pending: true,
        ...(warnings.length ? { warnings } : {}),
      },
    });
  }
  const skills = (await src.list('skills'))
    .filter((r) => path.posix.basename(r) === 'SKILL.md' && !r.startsWith('skills/.hub/'))
    .sort();
  if (skills.length) {
    const entries: MemoryEntry[] = [];
    const warnings: string[] = [];
    for (const rel of skills) {
      const { raw, error } = await tryRead(rel);
      if (error) warnings.push(`${rel}: ${unreadable(error)}`);
      if (!raw) continue;
      const fm = skillFrontMatter(raw.toString('utf8'));
      const dirName = path.posix.basename(path.posix.dirname(rel));
      if (!fm) warnings.push(`${rel} has no YAML front matter (name, description); shown by its directory name.`);
      const name = typeof fm?.name === 'string' ? fm.name : dirName;
      const desc = typeof fm?.description === 'string' ? fm.description : '';
      entries.push(
        mk('skill', desc ? `${name}: ${desc}` : name, src.display(rel), spec, {
          meta: { path: rel, ...(fm ? { frontMatter: fm } : {}) },
        }),
      );
    }
    out.push({
      rel: 'skills',
      file: {
        kind: 'hermes-skill',
        file: src.display('skills'),
        store: spec,
        entries,
        readOnly: READ_ONLY.skill,
        ...(warnings.length ? { warnings } : {}),
      },
    });
  }
  if (errors.length && !readable) throw errors[0];
  return out;
}
