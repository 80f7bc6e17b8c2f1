/**
 * Warnings of the agent hooks (sidecar/hooks): a restore point a hook could not take around the
 * agent's own tool call. One JSON line per warning in `<stateDir>/hooks/warnings.jsonl` (HookWarning
 * of the protocol), appended with O_APPEND so concurrent hooks do not tear each other's lines.
 * agent.status and `restore-point list` read the recent ones of a target.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { HookWarning } from '../protocol';

/** How far back agent.status looks (ms): 7 days. */
export const HOOK_WARNING_WINDOW_MS = 7 * 24 * 3600 * 1000;
/** At most this many warnings are reported. */
export const HOOK_WARNING_MAX = 20;

/** Path of the warnings file of a state dir. */
export function hookWarningsPath(stateDir: string): string {
  return path.join(stateDir, 'hooks', 'warnings.jsonl');
}

/** Append one warning (creates the dir, mode 0600). */
export async function recordHookWarning(stateDir: string, w: HookWarning): Promise<void> {
  const file = hookWarningsPath(stateDir);
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await fs.appendFile(file, JSON.stringify(w) + '\n', { mode: 0o600 });
}

/**
 * The recent warnings of one target, newest first (torn or foreign lines are skipped).
 * @param target the normalised target spec (ParsedTarget.spec); warnings recorded under the spelling
 *   the hook was given are matched by that spelling too
 * @param now for tests
 */
export async function recentHookWarnings(
  stateDir: string,
  targets: string[],
  now = Date.now(),
): Promise<HookWarning[]> {
  const raw = await fs.readFile(hookWarningsPath(stateDir), 'utf8').catch(() => '');
  const out: HookWarning[] = [];
  for (const line of raw.split('\n')) {
    if (!line.trim()) continue;
    try {
      const w = JSON.parse(line) as HookWarning;
      if (!w || typeof w.message !== 'string' || !targets.includes(w.target)) continue;
      if (now - Date.parse(w.time) > HOOK_WARNING_WINDOW_MS) continue;
      out.push(w);
    } catch {
      /* a torn line */
    }
  }
  return out.reverse().slice(0, HOOK_WARNING_MAX);
}
