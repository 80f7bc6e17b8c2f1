/**
 * Hermes Agent memory store (read-only in this issue).
 *
 * A Hermes home (HERMES_HOME, usually ~/.hermes) holds `memories/MEMORY.md` (the agent's notes) and
 * `memories/USER.md` (the user profile). Entries are separated by the full delimiter "\n§\n"; each is
 * strip()ped and empties are dropped; a bare "§" inside an entry is content. Usage is counted in
 * characters as Hermes does: len("\n§\n".join(entries)), against `memory.memory_char_limit` (default
 * 2200) and `memory.user_char_limit` (default 1375) from config.yaml.
 * Source: NousResearch/hermes-agent tools/memory_tool.py (see shared/reference/memory-stores.md §1.2).
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { MemoryFile } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import type { MemoryStoreAdapter } from '../types';

/** Hermes's entry delimiter. */
export const ENTRY_DELIMITER = '\n§\n';
/** Default char limits (Hermes tools/memory_tool.py). */
export const DEFAULT_MEMORY_CHAR_LIMIT = 2200;
export const DEFAULT_USER_CHAR_LIMIT = 1375;

/** Fixed agent-state files of a Hermes home (relative POSIX paths); skills/** is added on top. */
const FIXED_STATE_FILES = ['memories/MEMORY.md', 'memories/USER.md', 'memories/ARCHIVE.jsonl', 'SOUL.md'];

/**
 * Split the text of a Hermes memory file into entries: a UTF-8 BOM dropped, CRLF normalised to LF, split on "\n§\n",
 * each entry trimmed (Python str.strip semantics: whitespace), empties dropped.
 */
export function parseEntries(raw: string): string[] {
  const text = raw.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  return text
    .split(ENTRY_DELIMITER)
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
}

/** Usage in characters, as Hermes counts it: length of the entries joined by "\n§\n" (UTF-16 code points counted as Python does). */
export function usageChars(entries: string[]): number {
  // Python len() counts code points, not UTF-16 units.
  return [...entries.join(ENTRY_DELIMITER)].length;
}

/** Entry id: first 12 hex chars of sha256 of the entry text (UTF-8). */
export function entryId(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12);
}

/** Char limits of a Hermes home. */
export interface HermesLimits {
  memory: number;
  user: number;
}

/**
 * Read the char limits from `<home>/config.yaml`. A missing, unreadable or broken config (or a value
 * that is not a positive integer) falls back to the defaults; nothing here is fatal.
 */
export async function readLimits(home: string): Promise<HermesLimits> {
  const limits: HermesLimits = { memory: DEFAULT_MEMORY_CHAR_LIMIT, user: DEFAULT_USER_CHAR_LIMIT };
  let raw: string;
  try {
    raw = await fs.readFile(path.join(home, 'config.yaml'), 'utf8');
  } catch {
    return limits;
  }
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

async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** All regular files under `dir` (not following symlinked dirs), as POSIX paths relative to `base`. */
async function walkFiles(base: string, dir: string, out: string[]): Promise<void> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await fs.readdir(path.join(base, dir), { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) await walkFiles(base, rel, out);
    else if (e.isFile() || e.isSymbolicLink()) out.push(rel);
  }
}

/** The Hermes memory store adapter for one home directory. */
export class HermesStore implements MemoryStoreAdapter {
  readonly kind = 'hermes';

  /**
   * @param root absolute path of the Hermes home (the directory holding memories/ and config.yaml)
   * @param spec the store name as given, `hermes:/abs/home`
   */
  constructor(
    readonly root: string,
    readonly spec: string = `hermes:${root}`,
  ) {}

  /** @throws AgentKeepError StoreNotFound when root is not a directory or has neither memories/ nor config.yaml. */
  async check(): Promise<void> {
    let st: import('node:fs').Stats;
    try {
      st = await fs.stat(this.root);
    } catch {
      throw new AgentKeepError(
        'StoreNotFound',
        `Hermes home ${this.root} does not exist.`,
        'Point --store at the HERMES_HOME, usually hermes:~/.hermes written as an absolute path.',
      );
    }
    if (!st.isDirectory()) {
      throw new AgentKeepError('StoreNotFound', `Hermes home ${this.root} is not a directory.`, 'Point --store at the HERMES_HOME directory, usually ~/.hermes.');
    }
    const hasMem = await exists(path.join(this.root, 'memories'));
    const hasCfg = await exists(path.join(this.root, 'config.yaml'));
    if (!hasMem && !hasCfg) {
      throw new AgentKeepError(
        'StoreNotFound',
        `Not a Hermes home: no memories/ or config.yaml in ${this.root}.`,
        'Point at the HERMES_HOME, usually ~/.hermes.',
      );
    }
  }

  /**
   * Read MEMORY.md (kind hermes-memory) and USER.md (kind hermes-user). A missing file yields zero
   * entries. @throws StoreNotFound (see check), FileError when a file exists but cannot be read.
   */
  async list(): Promise<MemoryFile[]> {
    await this.check();
    const limits = await readLimits(this.root);
    const files: Array<[string, string, number]> = [
      ['hermes-memory', 'MEMORY.md', limits.memory],
      ['hermes-user', 'USER.md', limits.user],
    ];
    const out: MemoryFile[] = [];
    for (const [kind, name, limit] of files) {
      const file = path.join(this.root, 'memories', name);
      let raw = '';
      try {
        raw = await fs.readFile(file, 'utf8');
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') {
          throw new AgentKeepError('FileError', `Cannot read ${file}: ${(e as Error).message}.`, 'Check the file permissions of the Hermes home.');
        }
      }
      const entries = parseEntries(raw);
      out.push({
        kind,
        file,
        entries: entries.map((text) => ({ id: entryId(text), text })),
        usage: { chars: usageChars(entries), limit },
      });
    }
    return out;
  }

  /** Existing agent-state files (memories, ARCHIVE.jsonl, SOUL.md, skills/**), POSIX relative, sorted. */
  async agentStateFiles(): Promise<string[]> {
    const out: string[] = [];
    for (const rel of FIXED_STATE_FILES) {
      try {
        const st = await fs.lstat(path.join(this.root, rel));
        if (st.isFile() || st.isSymbolicLink()) out.push(rel);
      } catch {
        /* absent */
      }
    }
    await walkFiles(this.root, 'skills', out);
    return out.sort();
  }

  /** Whether `rel` (root-relative, POSIX) is Hermes agent state: the fixed files or anything under skills/. */
  isAgentStatePath(rel: string): boolean {
    const p = path.posix.normalize(rel.replace(/\\/g, '/')).replace(/^\.\//, '');
    if (p.startsWith('../') || p === '..' || path.posix.isAbsolute(p)) return false;
    return FIXED_STATE_FILES.includes(p) || (p.startsWith('skills/') && p.length > 'skills/'.length);
  }
}
