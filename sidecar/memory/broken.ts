/**
 * Broken stores (issue 13 #5): what the adapters share to report a damaged or unreadable store file
 * as broken (MemoryFile.broken, Provenance.unavailable) instead of showing it empty or clean, and to
 * refuse writes to it.
 */
import { isUtf8 } from 'node:buffer';
import type { BrokenStore, BrokenStorePart, StoreProblem } from '../protocol';
import { AgentKeepError, asAgentKeepError } from '../core/errors';
import type { MemoryStoreAdapter } from './types';

/** The protocol shape of an error: {code, message, hint}. */
export function problemOf(e: unknown): StoreProblem {
  const a = asAgentKeepError(e);
  return { code: a.code, message: a.message, ...(a.hint ? { hint: a.hint } : {}) };
}

/**
 * What is broken in store `s` (agent.status `broken`), from one `list()` and one `historyProblem()`
 * (no lint, no provenance per entry): each memory file with MemoryFile.broken (and how many entries
 * could still be read from it), then the history database when it cannot be read. `readable` is
 * `none` when list() fails (nothing can be read: the error is the one part), else `partial`.
 * @returns undefined when nothing is broken
 * @throws nothing for a broken store; the caller has run `s.check()` (a missing store is not broken)
 */
export async function storeProblems(s: MemoryStoreAdapter): Promise<BrokenStore | undefined> {
  const parts: BrokenStorePart[] = [];
  let readable: BrokenStore['readable'] = 'partial';
  try {
    for (const f of await s.list()) {
      if (!f.broken) continue;
      // one broken Agent Zero subdir marks each of its area files: one part, its entries counted together
      const same = parts.find((p) => p.message === f.broken!.message);
      if (same) same.entries = (same.entries ?? 0) + f.entries.length;
      else parts.push({ part: 'entries', file: f.file, kind: f.kind, entries: f.entries.length, ...f.broken });
    }
  } catch (e) {
    readable = 'none';
    parts.push({ part: 'entries', entries: 0, ...problemOf(e) });
  }
  const h = await s.historyProblem?.().catch((e: unknown) => ({ file: undefined, problem: problemOf(e) }));
  if (h) {
    // mem0 without Qdrant reads its entries from history.db: one problem, said once (with its file)
    const same = parts.find((p) => p.message === h.problem.message);
    if (same) same.file ??= h.file;
    else parts.push({ part: 'history', ...(h.file ? { file: h.file } : {}), ...h.problem });
  }
  return parts.length ? { readable, parts } : undefined;
}

/**
 * One line for a broken store (agent.status `message`): the first part's message, e.g. "Hermes
 * memory file /h/memories/MEMORY.md is a directory, not a file.", then "(and N more)".
 */
export function brokenSummary(b: BrokenStore): string {
  const more = b.parts.length > 1 ? ` (and ${b.parts.length - 1} more)` : '';
  const what = b.readable === 'none' ? 'Nothing in this store can be read: ' : '';
  return `${what}${b.parts[0].message}${more}`;
}

/** The error a write to a broken file throws: the same kind, message and fix as the problem. */
export function brokenError(p: StoreProblem): AgentKeepError {
  return new AgentKeepError('FileError', p.message, p.hint);
}

/**
 * Byte offset of the first byte sequence that is not well-formed UTF-8 (Unicode 15 table 3-7, what
 * Python's strict "utf-8" codec and TextDecoder({fatal: true}) reject: stray continuation bytes,
 * overlong forms, surrogates U+D800-DFFF, code points above U+10FFFF, truncated sequences), or
 * undefined when `buf` is valid.
 */
export function firstInvalidUtf8(buf: Uint8Array): number | undefined {
  if (isUtf8(buf)) return undefined;
  const n = buf.length;
  for (let i = 0; i < n;) {
    const b = buf[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    let len: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) len = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      len = 3;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      len = 4;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + len > n) return i;
    if (buf[i + 1] < lo || buf[i + 1] > hi) return i;
    for (let k = 2; k < len; k++) if (buf[i + k] < 0x80 || buf[i + k] > 0xbf) return i;
    i += len;
  }
  return undefined;
}

/** `offset` as "byte 812 (line 14, bytes ff fe)": where the bad sequence is, for a person with an editor. */
export function describeOffset(buf: Uint8Array, offset: number): string {
  let line = 1;
  for (let i = 0; i < offset; i++) if (buf[i] === 0x0a) line++;
  const bytes = Array.from(buf.subarray(offset, Math.min(buf.length, offset + 4)), (x) =>
    x.toString(16).padStart(2, '0'),
  ).join(' ');
  return `byte offset ${offset} (line ${line}, bytes ${bytes})`;
}
