/**
 * Put process.env back as it was, key by key. Never `process.env = {...saved}`: that replaces Node's
 * environment object with a plain one, so later changes (process.env.HOME = …) no longer reach the
 * real environment that os.homedir() and native code read, and tests that run after it see the old
 * values (seen: the TLS hint test in remote.test.ts failed only in the full suite).
 * @param saved a copy taken earlier: `const saved = { ...process.env }`
 */
export function restoreEnv(saved: NodeJS.ProcessEnv): void {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  for (const [k, v] of Object.entries(saved)) if (v !== undefined && process.env[k] !== v) process.env[k] = v;
}
