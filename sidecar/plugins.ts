/**
 * Plugin modules: a test and development hook that adds store kinds and machine backends from
 * outside the sidecar, with no edit inside it (how test/unit/registry-proof.test.ts registers a
 * throwaway store that the CLI binary, both servers and the extension's sidecar then see).
 *
 *     AGENTKEEP_PLUGINS=/abs/path/one.js[:/abs/path/two.js]   (path.delimiter-separated)
 *
 * Each path names a CommonJS module loaded with require() at start-up, before any command runs.
 * It exports `activate(api: PluginApi)` (or a default export with it) and registers through `api`
 * only: the sidecar is one bundle (out/cli.js), so a plugin that imported sidecar modules itself
 * would get its own copies of the registries (types-only imports are fine). Not meant for users:
 * a plugin runs with the sidecar's rights.
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { AgentKeepError } from './core/errors';
import { registerBackend } from './machine';
import { registerStore } from './memory';

/** What a plugin's `activate` gets: the two registries and the one error type of the sidecar. */
export interface PluginApi {
  /** sidecar/memory/index.ts registerStore: a StoreFactory (kind, forms, parse, create, detect). */
  registerStore: typeof registerStore;
  /** sidecar/machine/index.ts registerBackend: a BackendFactory (scheme, create, ...). */
  registerBackend: typeof registerBackend;
  /** The error class to throw (BadStore, StoreNotFound, ...), so the sidecar maps it to its code. */
  AgentKeepError: typeof AgentKeepError;
}

/** The shape of a plugin module. */
export interface PluginModule {
  activate(api: PluginApi): void;
}

const api: PluginApi = { registerStore, registerBackend, AgentKeepError };

const loaded = new Set<string>();

/**
 * Load the plugin modules named by `AGENTKEEP_PLUGINS` (absolute paths, path.delimiter-separated;
 * empty parts ignored), each once per process, and call their `activate`.
 * @returns the absolute paths activated by this call
 * @throws AgentKeepError InvalidParams naming the path and what is wrong with it (relative, does not
 *   load, no activate function, activate threw) and how to fix it
 */
export function loadPlugins(env: NodeJS.ProcessEnv = process.env): string[] {
  const list = (env.AGENTKEEP_PLUGINS ?? '')
    .split(path.delimiter)
    .map((p) => p.trim())
    .filter(Boolean);
  const out: string[] = [];
  const req = createRequire(__filename);
  for (const p of list) {
    if (!path.isAbsolute(p)) {
      throw new AgentKeepError(
        'InvalidParams',
        `AGENTKEEP_PLUGINS: "${p}" is not an absolute path.`,
        'Name each plugin module by its absolute path, e.g. AGENTKEEP_PLUGINS=/abs/path/plugin.js.',
      );
    }
    if (loaded.has(p)) continue;
    let mod: Partial<PluginModule> & { default?: Partial<PluginModule> };
    try {
      mod = req(p) as typeof mod;
    } catch (e) {
      throw new AgentKeepError(
        'InvalidParams',
        `AGENTKEEP_PLUGINS: cannot load ${p}: ${(e as Error).message.split('\n')[0]}`,
        'Point AGENTKEEP_PLUGINS at a CommonJS .js module that exists (build a TypeScript plugin first), or unset it.',
      );
    }
    const activate = mod.activate ?? mod.default?.activate;
    if (typeof activate !== 'function') {
      throw new AgentKeepError(
        'InvalidParams',
        `AGENTKEEP_PLUGINS: ${p} exports no activate(api) function.`,
        'Export `activate(api)` from the plugin module and register through api.registerStore / api.registerBackend.',
      );
    }
    try {
      activate(api);
    } catch (e) {
      throw new AgentKeepError(
        'InvalidParams',
        `AGENTKEEP_PLUGINS: activate() of ${p} failed: ${(e as Error).message}`,
        'Fix the plugin, or unset AGENTKEEP_PLUGINS.',
      );
    }
    loaded.add(p);
    out.push(p);
  }
  return out;
}
