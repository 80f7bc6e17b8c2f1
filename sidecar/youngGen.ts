/**
 * A small V8 young generation for one-shot CLI processes (issue 14, BENCHMARKS.md "Peak memory ...
 * branch mem100k"). V8 starts the young generation at 2 × 1 MiB semi-spaces and doubles them
 * (`--semi-space-growth-factor`, default 2) up to 2 × 16 MiB while many young objects survive, as they do
 * when a create reads the parent restore point's 100,000 entries: 32 MiB of a create's peak max RSS
 * for objects that move to the old generation anyway. The maximum size (`--max-semi-space-size`) is
 * read only when the isolate starts, but the growth factor is read at each growth, so setting it to 1
 * here, before the full CLI loads, keeps the young generation at its start size (measured: 2 × 2 MiB at
 * a 100,000-file create's peak; max RSS 185 -> 158 MiB, the create's time within the runs' noise).
 *
 * Not for the servers (`serve`, `mcp`): they live long and take many requests, where a bigger young
 * generation means fewer scavenges; they keep V8's default. `AGENTKEEP_YOUNG_GEN=default` keeps it
 * for every command (to compare).
 */

import { warnBadEnv } from './core/envWarn';

/** Commands (the first word after the root options) that keep V8's default young generation. */
const SERVERS = new Set(['serve', 'mcp']);

/**
 * Whether the command line `argv` (after `node sidecar.js`) runs a one-shot command: not a server,
 * not turned off by `AGENTKEEP_YOUNG_GEN=default`. Any other non-empty value warns once on stderr
 * (core/envWarn.ts) and is ignored.
 */
export function wantsSmallYoungGen(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.AGENTKEEP_YOUNG_GEN;
  if (v === 'default') return false;
  // any other value was ignored silently: said once on stderr, as the other AGENTKEEP_* knobs do
  if (v !== undefined && v !== '')
    warnBadEnv('AGENTKEEP_YOUNG_GEN', v, '"default" (or unset)', 'a small young generation for one-shot commands');
  // the root takes one option with a value (--state-dir D / --state-dir=D); the first other word is the command
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--state-dir') i++;
    else if (!a.startsWith('-')) return !SERVERS.has(a);
  }
  return true;
}

/** Keep the young generation of this process at its current size (see the module doc); never throws. */
export function keepYoungGenSmall(): void {
  try {
    // required here: node:v8 costs ~2 ms to load, which the launcher's fast paths and the hook's
    // non-risky path (they import this module) do not pay
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    (require('node:v8') as typeof import('node:v8')).setFlagsFromString('--semi-space-growth-factor=1');
  } catch {
    /* V8 refused the flag: the default growth, nothing else changes */
  }
}
