/**
 * Helpers of restorePoint.compare and restorePoint.readFile (Core): agent-state differences between
 * two captures, path normalisation, the size cap and the text/base64 encoding of file contents.
 */
import type { RestorePoint } from '../protocol';
import { formatBytes } from '../protocol/format';
import { AgentKeepError } from './errors';

type AgentCapture = RestorePoint['agent'][number];

/** Default cap of restorePoint.readFile: 2 MiB (2097152 bytes). */
export const DEFAULT_READ_MAX_BYTES = 2 * 1024 * 1024;

/**
 * Agent-state files that differ between two restore points' captures, as `<store>:<rel>` (sorted):
 * files only in one of them, or with another hash. Only stores captured by both are compared
 * (`sameStore` decides whether two store strings name one store).
 */
export function compareCaptures(
  from: AgentCapture[],
  to: AgentCapture[],
  sameStore: (a: string, b: string) => boolean,
): string[] {
  const out: string[] = [];
  for (const b of to) {
    const a = from.find((x) => sameStore(x.store, b.store));
    if (!a) continue;
    const before = new Map(a.files.map((f) => [f.path, f.hash]));
    for (const f of b.files) {
      if (before.get(f.path) !== f.hash) out.push(`${b.store}:${f.path}`);
      before.delete(f.path);
    }
    for (const rel of before.keys()) out.push(`${b.store}:${rel}`);
  }
  return out.sort();
}

/**
 * A target-relative POSIX path as the manifests store it: `./` and leading or trailing `/` dropped,
 * `\` read as `/`.
 * @throws AgentKeepError InvalidParams for an empty or absolute path, or one with `..` segments.
 */
export function normalizeRelPath(p: string): string {
  const slashed = p.replace(/\\/g, '/');
  const parts = slashed.split('/').filter((s) => s && s !== '.');
  if (!parts.length || parts.includes('..') || slashed.startsWith('/')) {
    throw new AgentKeepError(
      'InvalidParams',
      `"${p}" is not a path inside the target.`,
      'Give a target-relative path such as workspace/package.json (no leading "/", no "..").',
    );
  }
  return parts.join('/');
}

/** The error for a file above the read cap. */
export function tooLarge(what: string, size: number, maxBytes: number): AgentKeepError {
  return new AgentKeepError(
    'FileError',
    `${what} is ${formatBytes(size)} (${size} bytes), above the ${formatBytes(maxBytes)} limit for showing a file of a restore point.`,
    'Restore the restore point to get the file back, or pass a larger maxBytes (at most 64 MiB).',
  );
}

/** utf8 for valid UTF-8 without NUL bytes, base64 otherwise. */
export function encodeContent(buf: Buffer): { encoding: 'utf8' | 'base64'; content: string } {
  if (!buf.includes(0)) {
    try {
      return { encoding: 'utf8', content: new TextDecoder('utf-8', { fatal: true }).decode(buf) };
    } catch {
      /* not UTF-8 */
    }
  }
  return { encoding: 'base64', content: buf.toString('base64') };
}
