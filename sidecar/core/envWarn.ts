/**
 * Reading AGENTKEEP_* tuning variables whose bad values used to be ignored silently. No imports at
 * all: the hook's light entry (out/hook.js) loads it. A bad value is never fatal: one warning line
 * on stderr names the variable, the value, what is used instead and what is valid (once per variable
 * and value per process), as AGENTKEEP_PACK_MIN_OBJECTS does (./objects.ts packMinObjects).
 */

/** (variable, value) pairs already warned about in this process. */
const warned = new Set<string>();

/**
 * Warn once per process about `name=raw`: `agentkeep: warning: NAME="raw" is not VALID; using INSTEAD.`
 * @param valid what the variable accepts, e.g. "a number of milliseconds > 0"
 * @param instead what is used instead, e.g. "the default 20000"
 * @param write where the line goes (default process.stderr; the hook passes its own stderr writer)
 */
export function warnBadEnv(
  name: string,
  raw: string,
  valid: string,
  instead: string,
  write: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): void {
  const key = `${name}=${raw}`;
  if (warned.has(key)) return;
  warned.add(key);
  write(`agentkeep: warning: ${name}=${JSON.stringify(raw)} is not ${valid}; using ${instead}.`);
}

const OFF = /^(0|false|off|no)$/i;
const ON = /^(1|true|on|yes)$/i;

/**
 * Whether `raw` is a value envSwitch takes without a warning: unset, empty, or on/off-like (0, false,
 * off, no, 1, true, on, yes in any case).
 */
export function isSwitchValue(raw: string | undefined): boolean {
  return raw === undefined || raw === '' || OFF.test(raw) || ON.test(raw);
}

/**
 * An on/off variable: 0, false, off, no (any case) turn it off; 1, true, on, yes turn it on; unset or
 * empty is `dflt`. Any other value warns (warnBadEnv) and is `dflt`.
 * @param what the feature, for the warning: e.g. "the change journal" (-> "using the default: the change journal on")
 */
export function envSwitch(
  env: NodeJS.ProcessEnv,
  name: string,
  dflt: boolean,
  what: string,
  write?: (line: string) => void,
): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (OFF.test(raw)) return false;
  if (ON.test(raw)) return true;
  warnBadEnv(
    name,
    raw,
    '0, false, off, no (off) or 1, true, on, yes (on)',
    `the default: ${what} ${dflt ? 'on' : 'off'}`,
    write,
  );
  return dflt;
}
