/**
 * Risky config files: files whose edit can break an agent or its environment, so the editor offers
 * "Restore point before editing". Pure: decides from the path only (no I/O, no imports), so it lives
 * in the protocol: the extension's config-file lens and first-edit prompt call it on every edited
 * file (no sidecar round trip), and the risk engine (sidecar/risk/config.ts) builds on it. Sources:
 * shared/reference/ux-and-code-style.md §3.4 (Hermes, Agent Zero, generic manifests and system files).
 */

/** What kind of risky config a file is. */
export type RiskyConfigKind =
  'agent' | 'secrets' | 'dependencies' | 'lockfile' | 'containers' | 'service' | 'cron' | 'apt-sources';

export interface RiskyConfig {
  kind: RiskyConfigKind;
  /** One sentence: what the file is and what breaks when it goes wrong. */
  reason: string;
}

const DEP_MANIFESTS = new Set([
  'package.json',
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'pipfile',
  'environment.yml',
  'environment.yaml',
  'cargo.toml',
  'go.mod',
  'gemfile',
  'composer.json',
  'brewfile',
  'deno.json',
  'pnpm-workspace.yaml',
  '.tool-versions',
  '.nvmrc',
  '.python-version',
  'mise.toml',
  '.mise.toml',
]);
const LOCKFILES = new Set([
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'yarn.lock',
  'bun.lock',
  'bun.lockb',
  'poetry.lock',
  'uv.lock',
  'pdm.lock',
  'pipfile.lock',
  'cargo.lock',
  'go.sum',
  'gemfile.lock',
  'composer.lock',
  'conda-lock.yml',
  'brewfile.lock.json',
  'deno.lock',
]);

/**
 * Whether a file is a risky config file, and why.
 * @param path absolute or relative path, `/` or `\` separators (case of the base name is ignored
 *   where the tools ignore it)
 * @param agentHomes agent home folders configured by the user (e.g. the path of a `hermes:/…` store,
 *   a HERMES_HOME not named `.hermes`); files under them count as the agent's own
 * @returns `{kind, reason}`, or undefined when an edit of the file is not risky for the agent
 */
export function riskyConfigFile(path: string, agentHomes: string[] = []): RiskyConfig | undefined {
  const p = path.replace(/\\/g, '/');
  const homes = agentHomes.map((h) => h.replace(/\\/g, '/').replace(/\/+$/, '')).filter(Boolean);
  const base = p.replace(/^.*\//, '');
  const lower = base.toLowerCase();
  const segs = p.split('/');
  const inDir = (name: string): boolean => segs.slice(0, -1).some((s) => s === name);

  // Hermes: ~/.hermes (or a HERMES_HOME named hermes) config, secrets, personality, skills
  const hermes =
    segs.slice(0, -1).some((s) => s === '.hermes' || s === 'hermes-home') || homes.some((h) => p.startsWith(h + '/'));
  if (
    segs.some((s, i) => s === 'skills' && i < segs.length - 1) &&
    (hermes || /(^|\/)skills\/.*\/SKILL\.md$/i.test(p) || lower === 'skill.md')
  ) {
    return {
      kind: 'agent',
      reason: 'An agent skill: the agent loads and may run it; a broken skill changes what the agent does.',
    };
  }
  if (lower === 'skill.md')
    return {
      kind: 'agent',
      reason: 'An agent skill: the agent loads and may run it; a broken skill changes what the agent does.',
    };
  if (hermes && (lower === 'config.yaml' || lower === 'config.yml'))
    return {
      kind: 'agent',
      reason: "Hermes's config.yaml: a bad edit stops the agent or changes its model and tools.",
    };
  if (lower === 'soul.md' || (hermes && ['memory.md', 'user.md'].includes(lower)))
    return { kind: 'agent', reason: `${base}: the agent's personality or memory; an edit changes how it behaves.` };
  if (lower === 'auth.json' && (hermes || inDir('.codex') || inDir('.config')))
    return { kind: 'secrets', reason: "auth.json holds the agent's provider logins; a bad edit signs it out." };
  if (hermes && (lower === 'auth.json' || lower === 'pairing.json' || inDir('pairing')))
    return { kind: 'secrets', reason: 'Agent credentials or pairing data; a bad edit disconnects the agent.' };
  if (hermes && (lower === 'jobs.json' || inDir('cron')))
    return { kind: 'cron', reason: "The agent's scheduled jobs; a bad edit stops or duplicates them." };

  // Agent Zero: /a0/usr (settings.json, secrets, memory)
  const a0 = segs.some(
    (s, i) =>
      s === 'usr' && (segs[i - 1] === 'a0' || segs[i - 1] === 'agent-zero' || /agent-?zero/i.test(segs[i - 1] ?? '')),
  );
  if (a0 && lower === 'settings.json')
    return { kind: 'agent', reason: "Agent Zero's usr/settings.json: models, API keys and behaviour of the agent." };
  if (a0 && (/secret/.test(lower) || lower === '.env'))
    return { kind: 'secrets', reason: "Agent Zero's secrets: API keys the agent uses." };

  // secrets
  if (lower === '.env' || /^\.env\.[^/]+$/.test(lower) || lower.endsWith('.env')) {
    if (/\.(example|sample|template|dist)$/.test(lower)) return undefined;
    return { kind: 'secrets', reason: `${base} holds API keys and settings the agent and services read at start.` };
  }

  // dependencies
  if (/^requirements([-_.][\w.-]*)?\.(txt|in)$/.test(lower) || /^constraints([-_.][\w.-]*)?\.txt$/.test(lower))
    return { kind: 'dependencies', reason: `${base} pins Python dependencies; the next install follows it.` };
  if (DEP_MANIFESTS.has(lower))
    return {
      kind: 'dependencies',
      reason: `${base} declares dependencies or tool versions; the next install follows it.`,
    };
  if (LOCKFILES.has(lower))
    return { kind: 'lockfile', reason: `${base} pins exact dependency versions; the next install follows it.` };

  // containers
  if (/^(docker-)?compose([-._][\w.-]*)?\.ya?ml$/.test(lower))
    return { kind: 'containers', reason: `${base} defines which containers run and how; \`up\` applies it.` };
  if (/^(dockerfile|containerfile)(\..*)?$/.test(lower) || /\.(dockerfile|containerfile)$/.test(lower))
    return { kind: 'containers', reason: `${base} defines the image the agent or services run in.` };
  if (lower === 'devcontainer.json' || lower === '.devcontainer.json')
    return {
      kind: 'containers',
      reason: 'devcontainer.json defines the development container and its setup commands.',
    };

  // services, cron, apt sources
  if (
    /\.(service|timer|socket|path|mount)$/.test(lower) &&
    (inDir('systemd') || inDir('system') || inDir('user') || p.startsWith('/etc/'))
  ) {
    return { kind: 'service', reason: `${base} is a systemd unit: it decides what starts and how.` };
  }
  if (/\.(service|timer)$/.test(lower))
    return { kind: 'service', reason: `${base} is a systemd unit: it decides what starts and how.` };
  if (/\.plist$/.test(lower) && (inDir('LaunchAgents') || inDir('LaunchDaemons')))
    return { kind: 'service', reason: `${base} is a launchd job: it decides what starts and how.` };
  if (
    lower === 'crontab' ||
    inDir('cron.d') ||
    inDir('crontabs') ||
    /^cron\.(hourly|daily|weekly|monthly)$/.test(segs.at(-2) ?? '')
  ) {
    return { kind: 'cron', reason: `${base} schedules jobs; a bad edit stops or duplicates them.` };
  }
  if (
    p === '/etc/apt/sources.list' ||
    lower === 'sources.list' ||
    (inDir('sources.list.d') && /\.(list|sources)$/.test(lower)) ||
    (inDir('apt') && /\.(list|sources)$/.test(lower))
  ) {
    return {
      kind: 'apt-sources',
      reason: `${base} decides where apt installs packages from; the next upgrade follows it.`,
    };
  }
  if (inDir('preferences.d') && inDir('apt'))
    return { kind: 'apt-sources', reason: `${base} pins apt package versions.` };
  return undefined;
}

/** An absolute path with `\\` as `/`, `.` and `..` segments resolved and no trailing `/` (as path.resolve, no I/O). */
function normalAbs(p: string): string {
  const out: string[] = [];
  for (const seg of p.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return '/' + out.join('/');
}

/** Whether the absolute path `file` is `dir` or inside it (as path.relative would say; no I/O). */
export function pathInside(file: string, dir: string): boolean {
  const f = normalAbs(file);
  const d = normalAbs(dir);
  return f === d || f.startsWith(d === '/' ? '/' : d + '/');
}

/**
 * Why `file` is a risky config file of the configured agent, or undefined: `riskyConfigFile` with
 * the stores' local roots as agent homes, and only for files a restore point of the target covers
 * (inside the target's local root, or inside a store root). Without a local root (VM targets, or a
 * target not described yet) any risky file counts. The one scoping rule of the VS Code lens and
 * prompt (extension/configScope.ts) and the LSP server's (sidecar/server/editorCommands.ts).
 * @param homes absolute local roots of the agent's stores (StoreDescription.localRoot)
 * @param localRoot the target's local root (TargetDescription.localRoot of dir: and btrfs: targets)
 */
export function riskyConfigInScope(file: string, homes: string[], localRoot?: string): RiskyConfig | undefined {
  const risky = riskyConfigFile(file, homes);
  if (!risky) return undefined;
  if (localRoot && !pathInside(file, localRoot) && !homes.some((h) => pathInside(file, h))) return undefined;
  return risky;
}
