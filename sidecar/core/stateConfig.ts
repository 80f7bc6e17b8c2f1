/**
 * The per-state-dir settings file `<stateDir>/config.json` (optional; absent = defaults):
 *
 *     { "retention": { "keep": 20, "keepImportant": 10, "minAgeMs": 3600000 },
 *       "sizeCapBytes": 10737418240,
 *       "agents": { "hermes-vm": { "target": "proxmox://pve.lan/pve1/qemu/101",
 *                                  "stores": ["hermes:/root/.hermes"] } },
 *       "defaultAgent": "hermes-vm" }
 *
 * `retention` is applied after every create and by `prune` (explicit params win over it);
 * `sizeCapBytes` is the disk use one target's restore points may reach: create warns above 90% of it,
 * and restorePoint.usage reports `near` / `over`; `agents` are the named agents (`agentkeep agent add`,
 * sidecar/core/agents.ts) and `defaultAgent` the one used when a command names no agent and no target.
 * Unknown keys are refused (a typo must not silently mean "defaults"). Writers go through
 * updateStateConfig: under a lock, on the raw JSON (every key they do not change is kept as it was),
 * validated before writing, written atomically (temp file + rename, mode 0600).
 */
import { promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { AgentName, AgentSettings, RetentionParams } from '../protocol';
import { AgentKeepError } from './errors';
import { writeFileAtomic } from './fsutil';
import { withLock } from './lock';

/** Default size cap of one target's restore points: 10 GiB. */
export const DEFAULT_SIZE_CAP_BYTES = 10 * 1024 ** 3;
/** Create warns when a target's use passes this share of the cap. */
export const NEAR_CAP_RATIO = 0.9;

const StateConfig = z
  .object({
    retention: RetentionParams.strict().optional(),
    sizeCapBytes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Disk use one target may reach, in bytes (default 10 GiB)'),
    agents: z.record(AgentName, AgentSettings.strict()).optional().describe('Named agents by name'),
    defaultAgent: AgentName.optional().describe('The agent used when a command names neither --agent nor --target'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.defaultAgent !== undefined && !Object.hasOwn(c.agents ?? {}, c.defaultAgent)) {
      const message = `names no agent in "agents" (${c.defaultAgent})`;
      ctx.addIssue({ code: 'custom', path: ['defaultAgent'], message });
    }
  });
/** The parsed `<stateDir>/config.json`. */
export type StateConfig = z.infer<typeof StateConfig>;

/** Path of the settings file. */
export function stateConfigPath(stateDir: string): string {
  return path.join(stateDir, 'config.json');
}

/** BadStateDir for a config.json that cannot be read: a state dir that is a file, a directory in the file's place, permissions. */
function readError(stateDir: string, file: string, e: unknown): AgentKeepError {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOTDIR')
    return new AgentKeepError(
      'BadStateDir',
      `The state dir ${stateDir} is a file, not a directory, so ${file} cannot be read.`,
      `Point --state-dir (or AGENTKEEP_STATE_DIR) at a directory, or move the file ${stateDir} aside.`,
    );
  if (code === 'EISDIR')
    return new AgentKeepError(
      'BadStateDir',
      `${file} is a directory, not AgentKeep's settings file.`,
      `Move it aside (it should be a JSON file).`,
    );
  return new AgentKeepError(
    'BadStateDir',
    `Cannot read ${file} (${code ?? (e as Error).message}).`,
    'Fix its permissions (the user running agentkeep must read it) or remove it.',
  );
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
    text = readFileSync(file, 'utf8'); // (synchronously: one small file, read by every create)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw readError(stateDir, file, e);
  }
  return validate(file, parseRaw(file, text));
}

const SHAPE =
  'Expected {"retention": {"keep": N, "keepImportant": N, "minAgeMs": MS}, "sizeCapBytes": BYTES, ' +
  '"agents": {"NAME": {"target": T, "stores": [S], "failClosed": BOOL}}, "defaultAgent": "NAME"} ' +
  '(every field optional).';

/** JSON.parse of the file's text. @throws AgentKeepError BadStateDir naming the file and the JSON error. */
function parseRaw(file: string, text: string, writing = false): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const what = `${file} is not valid JSON (${(e as Error).message})${writing ? '; nothing was changed' : ''}.`;
    throw new AgentKeepError('BadStateDir', what, `Fix or remove it. ${SHAPE}`);
  }
}

/** The raw JSON checked against the schema. @throws AgentKeepError BadStateDir naming the field. */
function validate(file: string, raw: unknown): StateConfig {
  const r = StateConfig.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0];
    const at = i?.path.length ? i.path.join('.') : 'the top level';
    throw new AgentKeepError('BadStateDir', `${file}: ${at}: ${i?.message ?? 'bad value'}.`, SHAPE);
  }
  return r.data;
}

/** The raw JSON object of config.json as stored (keys and their order kept). */
export type RawStateConfig = Record<string, unknown>;

/**
 * Change `<stateDir>/config.json`: read it under `<stateDir>/locks/config.lock` (so two writers do
 * not lose each other's change), hand its raw JSON object to `change` (which edits it in place; keys
 * it does not touch stay as they were), check the result against the schema,
 * write it atomically (temp file + rename, mode 0600). A file that does not parse is never
 * overwritten. The state dir is created (0700) when missing.
 * @param change gets the raw object (`{}` when there is no file) to edit in place, and its validated
 *   view; may throw (then nothing is written)
 * @returns what `change` returned (`result`) and the config as written
 * @throws AgentKeepError BadStateDir (file unreadable, not JSON, a field that does not fit the schema
 *   before or after the change, state dir not writable), or what `change` throws
 */
export async function updateStateConfig<T>(
  stateDir: string,
  change: (raw: RawStateConfig, current: StateConfig) => T,
): Promise<{ result: T; config: StateConfig }> {
  const file = stateConfigPath(stateDir);
  const locks = path.join(stateDir, 'locks');
  const fix = 'Point --state-dir (or AGENTKEEP_STATE_DIR) at a writable directory.';
  try {
    await fs.mkdir(locks, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new AgentKeepError('BadStateDir', `Cannot create ${locks}: ${(e as Error).message}.`, fix);
  }
  const lock = { op: 'edit config.json', what: file, timeoutMs: 10_000 };
  return withLock(path.join(locks, 'config.lock'), lock, async () => {
    let text: string | undefined;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw readError(stateDir, file, e);
      }
    }
    const raw = text === undefined ? {} : parseRaw(file, text, true);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      const why = `${file}: the top level is not a JSON object; nothing was changed.`;
      throw new AgentKeepError('BadStateDir', why, SHAPE);
    }
    const current = validate(file, raw);
    const obj = raw as RawStateConfig;
    const result = change(obj, current);
    const config = validate(file, obj);
    try {
      await writeFileAtomic(file, JSON.stringify(obj, null, 2) + '\n', { mode: 0o600 });
    } catch (e) {
      throw new AgentKeepError('BadStateDir', `Cannot write ${file}: ${(e as Error).message}; it is unchanged.`, fix);
    }
    return { result, config };
  });
}

/** Where a target's disk use stands against the cap. */
export function capLevel(bytes: number, capBytes: number): 'ok' | 'near' | 'over' {
  return bytes > capBytes ? 'over' : bytes > capBytes * NEAR_CAP_RATIO ? 'near' : 'ok';
}
