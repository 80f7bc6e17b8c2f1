/**
 * Config paths for the risk engine: which writes change configuration the agent or the machine runs
 * with (configWriteTarget), on top of the risky config files of the editor lens (riskyConfigFile,
 * pure path rules that live in sidecar/protocol/configFiles.ts so the extension can use them too).
 * Pure: decides from the path only (no I/O).
 */
import { riskyConfigFile } from '../protocol/configFiles';

export { riskyConfigFile, type RiskyConfig, type RiskyConfigKind } from '../protocol/configFiles';

/** Shell start-up files: a line appended to one runs in every new shell. */
const SHELL_RC = new Set([
  '.bashrc',
  '.zshrc',
  '.profile',
  '.bash_profile',
  '.zprofile',
  '.zshenv',
  '.zlogin',
  '.bash_login',
  '.bash_aliases',
  '.kshrc',
  '.cshrc',
  '.tcshrc',
]);
/** Credential and tool-configuration files in a home directory. */
const HOME_CREDENTIALS = new Set([
  '.npmrc',
  '.pypirc',
  '.netrc',
  '.pgpass',
  '.gitconfig',
  '.git-credentials',
  '.yarnrc',
  '.yarnrc.yml',
  '.curlrc',
  '.wgetrc',
]);

/** Spellings of the home and agent-home directories folded to `~` and `~/.hermes`, quotes dropped. */
export function normalizeWritePath(path: string): string {
  return path
    .replace(/^["']|["']$/g, '')
    .replace(/\\/g, '/')
    .replace(/^(\$\{HERMES_HOME\}|\$HERMES_HOME)(?=\/|$)/, '~/.hermes')
    .replace(/^(\$\{HOME\}|\$HOME)(?=\/|$)/, '~')
    .replace(/^\/private\/(etc|var)\//, '/$1/');
}

/**
 * Whether writing, appending to or rewriting a file (a redirection, `tee`, `cp`/`mv`/`install` destination,
 * `sed -i`, a heredoc) changes configuration the agent or the machine runs with, and what that file is.
 * Narrower than riskyConfigFile on purpose: writing a project's package.json, Dockerfile or lockfile is
 * everyday work, writing /etc, a shell start-up file, SSH or agent configuration is not.
 * @param path the target as written (`~/.bashrc`, `"$HERMES_HOME/.env"`, `/etc/docker/daemon.json`)
 * @returns a short description, e.g. `shell start-up file`, or undefined
 */
export function configWriteTarget(path: string, agentHomes: string[] = []): string | undefined {
  const p = normalizeWritePath(path);
  if (!p || p === '/dev/null' || p.startsWith('/dev/') || p.startsWith('/proc/') || p.startsWith('/sys/'))
    return undefined;
  if (/^\/(tmp|var\/tmp)\//.test(p)) return undefined;
  const segs = p.split('/');
  const base = (segs.at(-1) ?? '').toLowerCase();
  if (p.startsWith('/etc/') || p === '/etc') {
    if (/\/sshd?_config(\.d\/|$)/.test(p)) return 'the SSH server configuration';
    if (/^\/etc\/(cron|crontab)/.test(p)) return 'the system crontab';
    if (/^\/etc\/systemd\//.test(p)) return 'a systemd unit';
    if (/^\/etc\/apt\//.test(p)) return 'apt sources';
    if (/^\/etc\/docker\//.test(p)) return 'the Docker daemon configuration';
    if (/^\/etc\/sudoers/.test(p)) return 'sudoers';
    return 'system configuration under /etc';
  }
  if (/^\/var\/spool\/cron\//.test(p)) return 'a crontab';
  if (SHELL_RC.has(base) || /\/\.config\/fish\/config\.fish$/.test(p)) return 'a shell start-up file';
  if (segs.includes('.ssh') || base === 'sshd_config' || base === 'authorized_keys') return 'SSH configuration';
  if (HOME_CREDENTIALS.has(base) && (p.startsWith('~/') || /^\/(home\/[^/]+|root|Users\/[^/]+)\/[^/]+$/.test(p)))
    return 'credentials or tool settings in the home directory';
  if (/(^|\/)\.(aws|kube|docker)\/(credentials|config|config\.json)$/.test(p)) return 'cloud or container credentials';
  if (base === 'daemon.json' && segs.includes('docker')) return 'the Docker daemon configuration';
  if (segs.includes('.claude') || base === '.claude.json' || base === '.mcp.json')
    return "Claude Code's settings, hooks or MCP servers";
  if (/(^|\/)\.(codex|gemini|cursor)\/[^/]+\.(toml|json)$/.test(p)) return "an agent's settings or MCP servers";
  // units and crontabs count where systemd and cron read them, not as files in a project
  if (
    /(^|\/)(\.config|lib|usr\/lib)\/systemd\/(user|system)\//.test(p) ||
    /(^|\/)Library\/Launch(Agents|Daemons)\//.test(p)
  )
    return 'a service definition';
  const r = riskyConfigFile(p, agentHomes);
  if (
    r &&
    (r.kind === 'agent' ||
      r.kind === 'secrets' ||
      r.kind === 'apt-sources' ||
      (r.kind === 'cron' && (segs.includes('.hermes') || agentHomes.length > 0)))
  ) {
    if (r.kind === 'agent')
      return segs.includes('.hermes') || agentHomes.length ? "the agent's own configuration" : 'agent configuration';
    if (r.kind === 'secrets') return 'secrets (.env)';
    return r.kind === 'cron' ? "the agent's scheduled jobs" : 'apt sources';
  }
  if (segs.includes('.hermes') && !segs.includes('logs') && !segs.includes('sessions') && !segs.includes('cache'))
    return "the agent's home";
  return undefined;
}
