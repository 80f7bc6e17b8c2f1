/**
 * The per-state-dir settings file `<stateDir>/config.json` (optional; absent = defaults):
 *
 *     { "retention": { "keep": 20, "keepImportant": 10, "minAgeMs": 3600000 },
 *       "sizeCapBytes": 10737418240 }
 *
 * `retention` is applied after every create and by `prune` (explicit params win over it);
 * `sizeCapBytes` is the disk use one target's restore points may reach: create warns above 90% of it,
 * and restorePoint.usage reports `near` / `over`. Unknown keys are refused (a typo must not silently
 * mean "defaults").
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { RetentionParams } from '../protocol';
import { AgentKeepError } from './errors';

/** Default size cap of one target's restore points: 10 GiB. */
export const DEFAULT_SIZE_CAP_BYTES = 10 * 1024 ** 3;
/** Create warns when a target's use passes this share of the cap. */
export const NEAR_CAP_RATIO = 0.9;

const StateConfig = z
  .object({
    retention: RetentionParams.strict().optional(),
    sizeCapBytes: z.number().int().positive().optional().describe('Disk use one target may reach, in bytes (default 10 GiB)'),
  })
  .strict();
/** The parsed `<stateDir>/config.json`. */
export type StateConfig = z.infer<typeof StateConfig>;

/** Path of the settings file. */
export function stateConfigPath(stateDir: string): string {
  return path.join(stateDir, 'config.json');
}

/**
 * Read `<stateDir>/config.json`; `{}` when it does not exist.
 * @throws AgentKeepError BadStateDir when it is not valid JSON or has a wrong field (the message names
 *   the field, the hint the expected shape).
 */
export async function readStateConfig(stateDir: string): Promise<StateConfig> {
  const file = stateConfigPath(stateDir);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new AgentKeepError('BadStateDir', `Cannot read ${file}: ${(e as Error).message}.`, 'Fix its permissions or remove it.');
  }
  const shape = 'Expected {"retention": {"keep": N, "keepImportant": N, "minAgeMs": MS}, "sizeCapBytes": BYTES} (every field optional).';
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new AgentKeepError('BadStateDir', `${file} is not valid JSON (${(e as Error).message}).`, shape);
  }
  const r = StateConfig.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0];
    const at = i?.path.length ? i.path.join('.') : 'the top level';
    throw new AgentKeepError('BadStateDir', `${file}: ${at}: ${i?.message ?? 'bad value'}.`, shape);
  }
  return r.data;
}

/** Where a target's disk use stands against the cap. */
export function capLevel(bytes: number, capBytes: number): 'ok' | 'near' | 'over' {
  return bytes > capBytes ? 'over' : bytes > capBytes * NEAR_CAP_RATIO ? 'near' : 'ok';
}
