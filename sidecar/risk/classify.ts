/**
 * Classify one shell command (already split into words) into a risk class, with a short reason.
 * Classes, highest priority first: remote-code > destructive > system > config > toolchain > deps.
 * Rules follow shared/reference/ux-and-code-style.md §3.1, the labelling rules of
 * shared/cases/risk-corpus/RULES.md (read-only, --dry-run, --check, restart/stop: not risky) and, for
 * destructive and config, docs/risk.md ("The six classes"). Pure functions, no I/O.
 */
import { redirectTargets, splitCommands, type Pipeline } from './shell';
import { configWriteTarget, normalizeWritePath } from './config';
import { RISK_CLASSES, type RiskClass } from '../protocol/risk';

export { RISK_CLASSES, type RiskClass };

/**
 * What a class changes, for reason texts: `<class>: <command> <what it changes>`.
 * Source of the wording of `risk` in findings and of lens tooltips.
 */
export const CLASS_REASON: Record<RiskClass, string> = {
  deps: 'changes project dependencies',
  toolchain: 'installs or changes user-wide or global tools',
  config: 'rewrites configuration the agent or the machine runs with',
  system: 'changes OS packages, persistent services, containers, users, permissions or the firewall',
  destructive: 'deletes or overwrites data that may not come back',
  'remote-code': 'runs code fetched from the network',
};

/**
 * One verdict: the class and a short reason naming the command and what it does, e.g.
 * `destructive: git reset --hard discards uncommitted changes` or
 * `config: echo >> ~/.bashrc rewrites a shell start-up file`. Meant for lens tooltips, `list` and hooks.
 */
export interface RiskHit {
  class: RiskClass;
  reason: string;
}

/** What the classifier knows about the file around a command. */
export interface ClassifyContext {
  /** Binaries `npx` runs without fetching: the package.json's own dependencies (when scanning one). */
  localBins?: ReadonlySet<string>;
  /**
   * Base names of files an earlier command of the same file downloaded (`curl -o x.sh`, `wget URL`,
   * `Invoke-WebRequest -OutFile x.ps1`): running one of them (`sudo sh x.sh`, `./x.run`) is remote-code.
   * The scanner fills it in file order (see noteDownloads).
   */
  downloaded?: Set<string>;
  /** The command runs under sudo/doas (set while recursing into `sudo python -m pip`). */
  elevated?: boolean;
  /** Working directory set by an earlier `cd DIR` of the same chain (resolves `find .`, `chmod -R x sub`). */
  cwd?: string;
}

/**
 * Every command name classifyWords knows (its `switch`), plus the fetchers that make a pipeline or
 * substitution remote-code. A logical command that names none of them cannot be risky, so the
 * scanner skips it (see MAYBE_RISKY); a unit test keeps this list in step with the switch.
 */
export const COMMAND_NAMES = [
  'apk',
  'apt',
  'apt-get',
  'aptitude',
  'asdf',
  'brew',
  'bun',
  'bundle',
  'bundler',
  'bunx',
  'cabal',
  'cargo',
  'choco',
  'composer',
  'conda',
  'corepack',
  'crontab',
  'dart',
  'deno',
  'dnf',
  'docker',
  'docker-compose',
  'dotnet',
  'dpkg',
  'flatpak',
  'flutter',
  'fnm',
  'gem',
  'gmake',
  'go',
  'hermes',
  'install-module',
  'install-package',
  'install-script',
  'launchctl',
  'make',
  'mamba',
  'microdnf',
  'micromamba',
  'mise',
  'mix',
  'nerdctl',
  'nix',
  'nix-env',
  'npm',
  'npx',
  'nvm',
  'pacman',
  'paru',
  'pdm',
  'pip',
  'pipx',
  'playwright',
  'pnpm',
  'podman',
  'podman-compose',
  'poetry',
  'pub',
  'rpm',
  'rtx',
  'rustup',
  'scoop',
  'snap',
  'stack',
  'systemctl',
  'tdnf',
  'update-module',
  'update-rc.d',
  'uv',
  'uvx',
  'volta',
  'winget',
  'wsl',
  'yarn',
  'yay',
  'yum',
  'zypper',
  'pwsh',
  'powershell',
  'pyenv',
  'rbenv',
  'nodenv',
  'goenv',
  'sdk',
  'pixi',
  'port',
  'mas',
  'gh',
  'code',
  'code-insiders',
  'codium',
  'cmake',
  'ninja',
  'meson',
  'install',
  'emerge',
  'xbps-install',
  'opkg',
  'nala',
  'pkg',
  'eopkg',
  'swupd',
  'softwareupdate',
  // destructive and config commands, wrappers that run a command elsewhere
  'rm',
  'unlink',
  'shred',
  'truncate',
  'wipefs',
  'mkfs',
  'mke2fs',
  'mkswap',
  'dd',
  'find',
  'git',
  'psql',
  'mysql',
  'mariadb',
  'sqlite3',
  'duckdb',
  'mongo',
  'mongosh',
  'redis-cli',
  'dropdb',
  'prisma',
  'supabase',
  'rails',
  'rake',
  'terraform',
  'tofu',
  'pulumi',
  'kubectl',
  'oc',
  'helm',
  'sed',
  'perl',
  'ruby',
  'awk',
  'gawk',
  'tee',
  'cp',
  'mv',
  'ln',
  'chmod',
  'chown',
  'chgrp',
  'setfacl',
  'useradd',
  'userdel',
  'usermod',
  'groupadd',
  'groupdel',
  'groupmod',
  'gpasswd',
  'passwd',
  'chpasswd',
  'adduser',
  'deluser',
  'addgroup',
  'delgroup',
  'visudo',
  'chsh',
  'ufw',
  'iptables',
  'ip6tables',
  'nft',
  'firewall-cmd',
  'apt-mark',
  'sysctl',
  'hostnamectl',
  'timedatectl',
  'localectl',
  'update-alternatives',
  'pm2',
  'loginctl',
  'claude',
  'codex',
  'gemini',
  'pipenv',
  'ssh',
  'multipass',
  'proot-distro',
  'lxc',
  'incus',
  'pct',
  'distrobox',
  'su',
  'runuser',
  'eval',
  'vagrant',
  'rd',
  'rmdir',
  'del',
  'remove-item',
  'manage.py',
  // fetchers: curl … | sh, bash <(curl …), irm … | iex, (New-Object Net.WebClient).DownloadString(…)
  'curl',
  'wget',
  'irm',
  'iwr',
  'invoke-restmethod',
  'invoke-webrequest',
  'downloadstring',
];

/** Tokens that can make a write or a permission change risky: config paths, the home, system trees, disks. */
const CONFIGISH =
  /(~|\$\{?(HOME|HERMES_HOME)\b|\/etc\b|\/dev\/(?!null\b)|\/var\/spool|\/(usr|var|bin|sbin|boot|opt|srv|root|home|Users|Library|lib)\b|\.(bash|zsh|k|c|tc)shrc\b|\.bashrc|\.zshrc|\.profile|\.bash_profile|\.zprofile|\.zshenv|\.zlogin|\.bash_(login|aliases)|\.env\b|\.ssh\b|\.hermes|\.claude|\.codex|\.gemini|\.cursor|\.mcp\.json|\.npmrc|\.pypirc|\.netrc|\.pgpass|\.gitconfig|\.git-credentials|\.yarnrc|\.curlrc|\.wgetrc|\.aws|\.kube|\.docker|daemon\.json|SKILL\.md|SOUL\.md|sshd_config|authorized_keys|systemd|LaunchAgents|LaunchDaemons|config\.fish|crontab|sudoers)/i;

/**
 * Quick test for redirections worth a look: a `>` in a command that also names something that can be a config
 * path or a disk (CONFIGISH, also before the `>`: `cd ~/.hermes && echo x > config.yaml`). `> out.log` and
 * `>/dev/null 2>&1` fail it; configWriteTarget decides.
 */
export const MAYBE_CONFIG_WRITE = { test: (s: string): boolean => s.includes('>') && CONFIGISH.test(s) };

/**
 * Names on every other line of a script (`git status`, `cp -r dist/* out`, `sed -n`, `| tee log`) that are
 * only risky in some forms: the fast path lets them through only with a sign of that form later on the line.
 * FAST_PATH_EXAMPLES holds one risky form of each, for the unit test that keeps the fast path complete.
 */
const CONTEXTUAL: Record<string, string> = {
  git: '(?=[^\\n|;&]*?\\s(?:reset|clean|push|checkout|restore|rm|stash|branch|reflog|gc|filter-branch|filter-repo|update-ref|config)\\b)',
  cp: `(?=[^\\n]*?${CONFIGISH.source})`,
  mv: `(?=[^\\n]*?${CONFIGISH.source})`,
  ln: `(?=[^\\n]*?${CONFIGISH.source})`,
  tee: `(?=[^\\n]*?${CONFIGISH.source})`,
  sed: '(?=[^\\n]*?(?:\\s-[a-zA-Z]*i|--in-place))',
  find: '(?=[^\\n]*?\\s-(?:delete|exec|execdir|ok|okdir)\\b)',
};
export const FAST_PATH_EXAMPLES: Record<string, string> = {
  git: 'git reset --hard',
  cp: 'cp x ~/.bashrc',
  mv: 'mv ~/.hermes /tmp/x',
  ln: 'ln -sf x /etc/y',
  tee: 'tee /etc/docker/daemon.json',
  sed: "sed -i 's/a/b/' .env",
  find: 'find . -delete',
};

/**
 * Names that are also the start of other words (`su` of sudo, `rm` of rmdir, `dd`, `oc`…): they must end where
 * the word ends, or every `sudo` line would take the slow path.
 */
const WHOLE_WORD = new Set([
  'su',
  'rm',
  'dd',
  'oc',
  'rd',
  'del',
  'eval',
  'pct',
  'lxc',
  'nft',
  'pm2',
  'ufw',
  'pkg',
  'port',
  'code',
  'make',
  'install',
  'go',
  'gh',
  'mas',
  'mix',
  'pub',
  'nix',
  'sdk',
  'bun',
  'uv',
]);

/** Quick test: does a command text name any of COMMAND_NAMES (at a word start; case-insensitive)? */
export const MAYBE_RISKY = new RegExp(
  `(?<![\\w-])(?:${[...new Set(COMMAND_NAMES)]
    .sort((a, b) => b.length - a.length)
    .map(
      (n) =>
        n.replace(/[.]/g, '\\.') +
        (CONTEXTUAL[n] ? `(?![\\w-])${CONTEXTUAL[n]}` : WHOLE_WORD.has(n) ? '(?![\\w])' : ''),
    )
    .join('|')})`,
  'i',
);

/** Base name of a path or URL (query and fragment dropped). */
function baseName(p: string): string {
  return p
    .replace(/[?#].*$/, '')
    .replace(/\\/g, '/')
    .replace(/\/+$/, '')
    .replace(/^.*\//, '');
}

/**
 * Record in `ctx.downloaded` the files a fetch command writes: `curl -o F` / `--output F` / `-O URL`
 * (remote name), `wget URL` / `-O F` / `--output-document=F`, `Invoke-WebRequest URL -OutFile F`.
 */
export function noteDownloads(words: string[], ctx: ClassifyContext): void {
  if (!ctx.downloaded) return;
  const w = unwrap(words);
  if (!w.length) return;
  const name = cmdName(w[0]);
  const args = w.slice(1);
  const urls = args.filter((a) => /^(https?|ftp):\/\//i.test(a));
  const add = (f: string | undefined): void => {
    if (f && f !== '-' && !f.startsWith('/dev/')) ctx.downloaded!.add(baseName(f));
  };
  if (name === 'curl') {
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (a === '-o' || a === '--output') add(args[++i]);
      else if (/^-o\S/.test(a)) add(a.slice(2));
      else if (a.startsWith('--output=')) add(a.slice(9));
      else if (a === '-O' || a === '--remote-name' || /^-[a-zA-Z]*O[a-zA-Z]*$/.test(a)) urls.forEach(add);
    }
  } else if (name === 'wget') {
    const o = args.findIndex((a) => a === '-O' || /^-[a-zA-Z]*O$/.test(a));
    const eq = args.find((a) => a.startsWith('--output-document='));
    if (o >= 0) add(args[o + 1]);
    else if (eq) add(eq.slice(18));
    else urls.forEach(add);
  } else if (name === 'invoke-webrequest' || name === 'iwr' || name === 'irm' || name === 'invoke-restmethod') {
    const o = args.findIndex((a) => /^-outfile$/i.test(a));
    if (o >= 0) add(args[o + 1]);
  }
}

/** Whether a command runs a file `ctx.downloaded` names: `sh x.sh`, `sudo bash ./x.sh`, `./x.run`, `python3 get.py`, `& .\\x.ps1`. */
function runsDownloaded(w: string[], ctx: ClassifyContext): boolean {
  const d = ctx.downloaded;
  if (!d?.size || !w.length) return false;
  const first = w[0] === '&' || w[0] === '.' ? w[1] : w[0];
  if (first === undefined) return false;
  if (/[\\/]/.test(first) && d.has(baseName(first))) return true;
  if (INTERPRETERS.has(cmdName(first)) || cmdName(first) === 'source') {
    const script = w.slice(w.indexOf(first) + 1).find((a) => !a.startsWith('-'));
    return script !== undefined && d.has(baseName(script));
  }
  return false;
}

/**
 * Command substitutions of a raw command text that the shell runs: `$(…)`, backticks, `<(…)`, `>(…)`
 * (not inside single quotes; `$((…))` arithmetic excluded). Returns their inner texts.
 */
export function substitutions(raw: string): string[] {
  const out: string[] = [];
  let sq = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === '\\' && !sq) {
      i++;
      continue;
    }
    if (c === "'") {
      sq = !sq;
      continue;
    }
    if (sq) continue;
    if ((c === '$' || c === '<' || c === '>') && raw[i + 1] === '(' && raw[i + 2] !== '(') {
      let depth = 1;
      let j = i + 2;
      let q: string | null = null;
      for (; j < raw.length && depth > 0; j++) {
        const d = raw[j];
        if (q) {
          if (d === q) q = null;
          continue;
        }
        if (d === "'" || d === '"') q = d;
        else if (d === '(') depth++;
        else if (d === ')') depth--;
      }
      out.push(raw.slice(i + 2, j - 1));
      i = j - 1;
    } else if (c === '`') {
      const j = raw.indexOf('`', i + 1);
      if (j < 0) break;
      out.push(raw.slice(i + 1, j));
      i = j;
    }
  }
  return out;
}

const PRIORITY = Object.fromEntries(RISK_CLASSES.map((c, i) => [c, i + 1])) as Record<RiskClass, number>;

/** The higher-priority class of two (null = not risky). */
export function maxClass(a: RiskClass | null, b: RiskClass | null): RiskClass | null {
  if (!a) return b;
  if (!b) return a;
  return PRIORITY[a] >= PRIORITY[b] ? a : b;
}

/** The higher-priority verdict of two (the first on a tie; null = not risky). */
export function maxHit(a: RiskHit | null, b: RiskHit | null): RiskHit | null {
  if (!a) return b;
  if (!b) return a;
  return PRIORITY[a.class] >= PRIORITY[b.class] ? a : b;
}

/** A short head of a command for reasons: its name and first subcommand (`apt-get install`, `pip install`). */
function headOf(w: string[]): string {
  const n = cmdName(w[0] ?? '');
  const [sub, sub2] = positionals(w.slice(1));
  const word = (x: string | undefined): boolean => x !== undefined && /^[a-z][\w.:-]*$/i.test(x) && x.length <= 24;
  if (!word(sub)) return n;
  // two words where the first only names a group: docker compose up, uv pip install, hermes skills install
  return [
    'compose',
    'image',
    'container',
    'system',
    'volume',
    'network',
    'skills',
    'gateway',
    'tool',
    'pip',
    'self',
    'global',
    'extension',
    'bundle',
    'env',
    'group',
    'module',
    'profile',
  ].includes(sub!) && word(sub2)
    ? `${n} ${sub} ${sub2}`
    : `${n} ${sub}`;
}

/** The reason of a class found by a rule without a reason of its own: `deps: pip install changes project dependencies`. */
function defaultReason(cls: RiskClass, w: string[]): string {
  return `${cls}: ${headOf(w)} ${CLASS_REASON[cls]}`;
}

function hit(cls: RiskClass, reason: string): RiskHit {
  return { class: cls, reason: `${cls}: ${reason}` };
}

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash', 'fish']);
const INTERPRETERS = new Set([
  ...SHELLS,
  'python',
  'python3',
  'python2',
  'perl',
  'ruby',
  'node',
  'iex',
  'invoke-expression',
  'pwsh',
  'powershell',
]);
const FETCHERS = new Set(['curl', 'wget', 'irm', 'iwr', 'invoke-restmethod', 'invoke-webrequest', 'fetch']);
const AGENT_IMAGE = /(agent0ai|frdel)\/agent-zero|nousresearch\/hermes/i;
/** A directory on PATH where installed tools live (for `install`, `curl -o`, `| tar -C`). */
const BIN_DIR = /^(\/usr(\/local)?\/s?bin|\/opt\/[^/]+\/bin|\/bin|\/sbin|(~|\$HOME|\$\{HOME\})\/(\.local\/)?bin)(\/|$)/;
const FETCH_SUBST = /(\$\(|<\(|`)\s*(curl|wget|irm|iwr|invoke-restmethod|invoke-webrequest)\b/i;
/** Local devDependency binaries that `npx` runs without fetching (heuristic; not I/O). */
const LOCAL_BINS = new Set([
  'tsc',
  'tsx',
  'ts-node',
  'eslint',
  'prettier',
  'mocha',
  'jest',
  'vitest',
  'esbuild',
  'vite',
  'webpack',
  'rollup',
  'nodemon',
  'vsce',
  'playwright',
  'changeset',
  'lerna',
  'nx',
  'turbo',
  // project CLIs installed as devDependencies by their own setup guides (npx runs the local copy)
  'prisma',
  'supabase',
  'drizzle-kit',
  'next',
  'knex',
  'sequelize',
  'typeorm',
  'hardhat',
  'wrangler',
  'astro',
  'nuxi',
  'biome',
]);
const REPORT_FLAGS = new Set([
  '--dry-run',
  '--dryrun',
  '--help',
  '-h',
  '--version',
  '-V',
  '--simulate',
  '--just-print',
  '--no-act',
  '--recon',
]);

/** Normalised command name: basename, lower case, without .exe / .cmd and a version suffix for pip/python (pip3.12 → pip3). */
export function cmdName(w: string): string {
  if (/^[a-z][a-z0-9_-]*$/.test(w)) return w; // the common case: a bare lower-case name
  let n = w
    .replace(/^.*[\\/]/, '')
    .toLowerCase()
    .replace(/\.(exe|cmd|bat|ps1)$/, '');
  n = n.replace(/^(pip|python)(\d+)(\.\d+)?$/, '$1$2');
  return n;
}

const SUDO_ARG_OPTS = new Set([
  '-u',
  '-g',
  '-C',
  '-D',
  '-p',
  '-r',
  '-t',
  '-U',
  '-h',
  '-T',
  '--user',
  '--group',
  '--chdir',
]);
const KEYWORDS = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  '!',
  '{',
  '}',
  '(',
  ')',
  'time',
  'exec',
  'nohup',
  'builtin',
  'esac',
  'unbuffer',
  'pkexec',
]);
/** Command names a `$VAR` / `${VAR}` wrapper may stand before (`${SUDO} apt-get install`, `$STD apt install`). */
let knownNames: Set<string> | undefined;
function isKnownName(n: string): boolean {
  knownNames ??= new Set(
    [...COMMAND_NAMES, 'sh', 'bash', 'zsh', 'dash', 'ksh', 'python', 'python3', 'sudo', 'doas', 'env', 'setsid'].filter(
      (x) => x !== 'install',
    ),
  );
  return knownNames.has(n);
}

/** Strip prefixes that do not change what runs: env assignments, sudo/doas/env/nice/time, shell keywords, `(`/`{`. */
export function unwrap(words: string[]): string[] {
  let w = words.slice();
  for (;;) {
    if (!w.length) return w;
    let first = w[0];
    if (/^[({]+./.test(first) && !/^\{[^{}]*\}$/.test(first)) {
      first = first.replace(/^[({]+/, '');
      w = [first, ...w.slice(1)];
      continue;
    }
    if (KEYWORDS.has(first)) {
      w = w.slice(1);
      continue;
    }
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(first)) {
      w = w.slice(1);
      continue;
    }
    if (/^[^()\s]+\)$/.test(first) && !first.includes('(')) {
      // case pattern `install)`
      w = w.slice(1);
      continue;
    }
    const n = cmdName(first);
    if (n === 'sudo' || n === 'doas' || n === 'run0') {
      let i = 1;
      while (i < w.length && w[i].startsWith('-')) {
        if (w[i] === '--') {
          i++;
          break;
        }
        if (SUDO_ARG_OPTS.has(w[i])) i++;
        i++;
      }
      w = w.slice(i);
      continue;
    }
    if (n === 'env') {
      let i = 1;
      while (i < w.length && (w[i].startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[i]))) {
        if (w[i] === '-u' || w[i] === '--unset' || w[i] === '-C') i++;
        i++;
      }
      w = w.slice(i);
      continue;
    }
    // a variable standing for a wrapper: ${SUDO} apt-get install, $STD apt install -y git (not $PYTHON -m pip: see classifyWords)
    if (/^\$\{?[A-Za-z_]\w*\}?$/.test(first) && w[1] !== undefined && isKnownName(cmdName(w[1]))) {
      w = w.slice(1);
      continue;
    }
    if (n === 'setsid') {
      let i = 1;
      while (i < w.length && w[i].startsWith('-')) i++;
      w = w.slice(i);
      continue;
    }
    if (n === 'nice' || n === 'ionice' || n === 'stdbuf' || n === 'timeout' || n === 'xargs') {
      let i = 1;
      while (i < w.length && w[i].startsWith('-')) {
        if (/^-(n|c|[ioe]|I|L|P|s|d|a|E)$/.test(w[i])) i++;
        i++;
      }
      if (n === 'timeout' && i < w.length) i++; // the duration
      w = w.slice(i);
      continue;
    }
    if (n === 'command' && w[1] && !w[1].startsWith('-')) {
      w = w.slice(1);
      continue;
    }
    return w;
  }
}

/** Positional arguments (words not starting with `-`). */
function positionals(args: string[]): string[] {
  return args.filter((a) => !a.startsWith('-'));
}
function has(args: string[], ...flags: string[]): boolean {
  return args.some((a) => flags.includes(a) || flags.some((f) => f.startsWith('--') && a.startsWith(f + '=')));
}

/**
 * Classify the words of one simple command (quotes removed, redirections dropped).
 * @param ctx what the caller knows around the command (downloaded files, local bins, cwd of the chain)
 * @returns the class and a reason, or null when not risky
 */
export function classifyWords(input: string[], depth = 0, ctx: ClassifyContext = {}): RiskHit | null {
  if (depth > 4) return null;
  let w = unwrap(input);
  if (!w.length) return null;
  const elevated =
    ctx.elevated || input.slice(0, input.length - w.length).some((x) => ['sudo', 'doas', 'run0'].includes(cmdName(x)));
  // an interpreter named by a variable or notebook interpolation: `{sys.executable} -m pip`, `$PYTHON -m pip`
  if (/^(\{[^}]*\}|\$\{?[A-Za-z_][\w.]*\}?|\$\([A-Za-z_][\w.]*\))$/.test(w[0]) && w[1] === '-m')
    w = ['python', ...w.slice(1)];
  // the closing parenthesis of a subshell sticks to the last word: `(cd /tmp && rm -rf work)`
  const last = w[w.length - 1];
  if (w.length > 1 && last.endsWith(')') && !last.includes('('))
    w = [...w.slice(0, -1), last.replace(/\)+$/, '')].filter((x) => x !== '');
  const more = classifyMore(w, depth, elevated ? { ...ctx, elevated } : ctx);
  if (more !== undefined) return more;
  const r = classifyKnown(w, depth, ctx, elevated);
  return typeof r === 'string' ? { class: r, reason: defaultReason(r, w) } : r;
}

/** The package-manager, service and remote-code rules (the first classifier); a reason is added by the caller. */
function classifyKnown(
  w: string[],
  depth: number,
  ctx: ClassifyContext,
  elevated: boolean,
): RiskClass | RiskHit | null {
  const name = cmdName(w[0]);
  const args = w.slice(1);
  const pos = positionals(args);
  const sub = pos[0] ?? '';
  const sub2 = pos[1] ?? '';
  const report = args.some((a) => REPORT_FLAGS.has(a));

  // Fetched code run through a substitution: bash <(curl ...), sh -c "$(curl ...)", eval "$(wget ...)", python3 <(curl ...)
  if (
    (INTERPRETERS.has(name) || name === 'eval' || name === 'source' || name === '.') &&
    w.some((x) => FETCH_SUBST.test(x))
  ) {
    return hit('remote-code', `${name} <(curl …) runs a script fetched from the network`);
  }
  // running an installer an earlier command of the file downloaded
  if (runsDownloaded(w, ctx)) return hit('remote-code', `${w.join(' ').slice(0, 60)} runs a file downloaded earlier`);
  if (
    (name === 'iex' || name === 'invoke-expression') &&
    /\b(irm|iwr|invoke-restmethod|invoke-webrequest|downloadstring)\b/i.test(args.join(' '))
  ) {
    return 'remote-code';
  }

  switch (name) {
    case 'sh':
    case 'bash':
    case 'zsh':
    case 'dash':
    case 'ksh': {
      const ci = args.findIndex((a) => /^-[a-z]*c[a-z]*$/.test(a));
      if (ci >= 0 && args[ci + 1] !== undefined) return classifyText(args[ci + 1], depth + 1, ctx);
      return null;
    }
    case 'npm': {
      if (report) return null;
      const global = has(args, '-g', '--global', '--location=global');
      if (['exec', 'x'].includes(sub)) return 'remote-code';
      // npm create x / npm init x: fetch and run the create-x initializer (bare `npm init` only writes package.json)
      if (['create', 'init', 'innit'].includes(sub) && sub2) return 'remote-code';
      if (['link', 'ln'].includes(sub)) return 'toolchain';
      if (
        [
          'install',
          'i',
          'in',
          'ins',
          'inst',
          'insta',
          'instal',
          'isnt',
          'isntall',
          'add',
          'ci',
          'clean-install',
          'install-clean',
          'update',
          'up',
          'upgrade',
          'udpate',
          'uninstall',
          'un',
          'unlink',
          'remove',
          'rm',
          'r',
        ].includes(sub)
      ) {
        return global ? 'toolchain' : 'deps';
      }
      return null;
    }
    case 'pnpm': {
      if (report) return null;
      if (['dlx', 'create'].includes(sub)) return 'remote-code';
      if (
        ['install', 'i', 'add', 'update', 'up', 'upgrade', 'remove', 'rm', 'uninstall', 'un', 'link', 'ln'].includes(
          sub,
        )
      ) {
        return has(args, '-g', '--global') ? 'toolchain' : 'deps';
      }
      return null;
    }
    case 'yarn': {
      if (report) return null;
      if (['dlx', 'create'].includes(sub)) return 'remote-code';
      if (sub === 'global' && ['add', 'remove', 'upgrade'].includes(sub2)) return 'toolchain';
      if (!sub || ['install', 'add', 'upgrade', 'up', 'remove', 'upgrade-interactive'].includes(sub)) return 'deps';
      return null;
    }
    case 'bun': {
      if (report) return null;
      if (['x', 'create'].includes(sub)) return 'remote-code';
      if (sub === 'upgrade') return 'toolchain';
      if (['install', 'i', 'add', 'a', 'update', 'remove', 'rm'].includes(sub))
        return has(args, '-g', '--global') ? 'toolchain' : 'deps';
      return null;
    }
    case 'bunx':
    case 'uvx':
      return report && !pos.length ? null : 'remote-code';
    case 'npx': {
      if (!pos.length) return null;
      const own = args.slice(0, args.indexOf(sub)); // npx's own options come before the package
      const fetches =
        has(own, '-y', '--yes', '-p', '--package') ||
        /.@/.test(sub) ||
        !(LOCAL_BINS.has(sub) || ctx.localBins?.has(sub));
      if (fetches) return 'remote-code';
      return classifyWords(args.slice(args.indexOf(sub)), depth + 1, ctx);
    }
    case 'pip':
    case 'pip2':
    case 'pip3': {
      if (report) return null;
      // sudo pip writes the OS Python's site-packages (the distribution's packages): system
      if (sub === 'install')
        return has(args, '--user')
          ? 'toolchain'
          : elevated && !has(args, '--target', '-t', '--prefix', '--root')
            ? 'system'
            : 'deps';
      if (sub === 'uninstall') return elevated ? 'system' : 'deps';
      return null;
    }
    case 'python':
    case 'python2':
    case 'python3':
    case 'py': {
      const mi = args.indexOf('-m');
      if (mi >= 0 && args[mi + 1])
        return classifyWords(args.slice(mi + 1), depth + 1, elevated ? { ...ctx, elevated } : ctx);
      return null;
    }
    case 'uv': {
      if (report) return null;
      if (sub === 'pip' && ['install', 'sync', 'uninstall'].includes(sub2)) return 'deps';
      if (['add', 'remove', 'sync'].includes(sub)) return 'deps';
      if (sub === 'tool' && ['install', 'upgrade', 'uninstall'].includes(sub2)) return 'toolchain';
      if (sub === 'tool' && sub2 === 'run') return 'remote-code';
      if (sub === 'self' && sub2 === 'update') return 'toolchain';
      if (sub === 'python' && ['install', 'uninstall', 'upgrade'].includes(sub2)) return 'toolchain';
      return null;
    }
    case 'poetry':
      if (report) return null;
      if (sub === 'self' && ['add', 'update', 'install'].includes(sub2)) return 'toolchain';
      return ['add', 'install', 'update', 'remove', 'sync'].includes(sub) ? 'deps' : null;
    case 'pdm':
      return !report && ['add', 'install', 'update', 'remove', 'sync'].includes(sub) ? 'deps' : null;
    case 'conda':
    case 'mamba':
    case 'micromamba':
      if (report) return null;
      if (sub === 'env' && ['create', 'update', 'remove'].includes(sub2)) return 'deps';
      return ['install', 'update', 'upgrade', 'remove', 'uninstall', 'create'].includes(sub) ? 'deps' : null;
    case 'pipx':
      if (sub === 'run') return 'remote-code';
      return !report &&
        [
          'install',
          'inject',
          'upgrade',
          'upgrade-all',
          'reinstall',
          'reinstall-all',
          'uninstall',
          'uninstall-all',
          'upgrade-shared',
        ].includes(sub)
        ? 'toolchain'
        : null;
    case 'cargo':
      if (report || has(args, '--list')) return null;
      if (['add', 'update', 'remove', 'rm'].includes(sub)) return 'deps';
      return ['install', 'uninstall', 'binstall'].includes(sub) ? 'toolchain' : null;
    case 'go':
      if (sub === 'get') return 'deps';
      return sub === 'install' ? 'toolchain' : null;
    case 'gem':
      return !report && ['install', 'update', 'uninstall'].includes(sub) ? 'toolchain' : null;
    case 'bundle':
    case 'bundler':
      return !report && (!sub || ['install', 'update', 'add'].includes(sub)) ? 'deps' : null;
    case 'composer':
      if (sub === 'global' && ['require', 'update', 'remove'].includes(sub2)) return 'toolchain';
      return !report && ['require', 'install', 'update', 'remove'].includes(sub) ? 'deps' : null;
    case 'rustup':
      if (['update', 'install', 'default'].includes(sub)) return 'toolchain';
      if (
        ['toolchain', 'component', 'target', 'self'].includes(sub) &&
        ['install', 'add', 'remove', 'uninstall', 'update'].includes(sub2)
      )
        return 'toolchain';
      return null;
    case 'nvm':
    case 'fnm':
    case 'volta':
    case 'asdf':
    case 'mise':
    case 'rtx':
      return ['install', 'uninstall'].includes(sub) || (sub === 'plugin' && sub2 === 'add') ? 'toolchain' : null;
    case 'corepack':
      if (sub === 'enable' || sub === 'install') return 'toolchain';
      return sub === 'prepare' && has(args, '--activate') ? 'toolchain' : null;
    case 'brew':
      if (report) return null;
      if (sub === 'bundle') return ['check', 'list', 'dump'].includes(sub2) ? null : 'toolchain';
      return ['install', 'reinstall', 'upgrade', 'uninstall', 'remove', 'rm', 'link', 'unlink'].includes(sub)
        ? 'toolchain'
        : null;
    case 'scoop':
    case 'winget':
    case 'choco':
      return ['install', 'upgrade', 'update', 'uninstall', 'remove'].includes(sub) &&
        !(name === 'scoop' && sub === 'update' && !sub2)
        ? 'toolchain'
        : null;
    case 'install-module':
    case 'install-package':
    case 'update-module':
    case 'install-script':
      return 'toolchain';
    case 'pwsh':
    case 'powershell': {
      // powershell -c "irm … | iex" / -Command …: classify the command text
      const ci = args.findIndex((a) => /^-(c|command|encodedcommand)$/i.test(a));
      return ci >= 0 && args[ci + 1] !== undefined && !/^-encodedcommand$/i.test(args[ci])
        ? classifyText(args.slice(ci + 1).join(' '), depth + 1, ctx)
        : null;
    }
    case 'pyenv':
    case 'rbenv':
    case 'nodenv':
    case 'goenv':
    case 'sdk':
      return ['install', 'uninstall'].includes(sub) || (name === 'sdk' && ['upgrade', 'selfupdate'].includes(sub))
        ? 'toolchain'
        : null;
    case 'pixi':
      if (sub === 'global')
        return ['install', 'upgrade', 'remove', 'uninstall', 'add'].includes(sub2) ? 'toolchain' : null;
      return ['add', 'install', 'update', 'upgrade', 'remove'].includes(sub)
        ? 'deps'
        : sub === 'self-update'
          ? 'toolchain'
          : null;
    case 'port':
    case 'mas':
      return ['install', 'upgrade', 'uninstall', 'selfupdate'].includes(sub) ? 'toolchain' : null;
    case 'gh':
      return sub === 'extension' && ['install', 'upgrade', 'remove'].includes(sub2) ? 'toolchain' : null;
    case 'code':
    case 'code-insiders':
    case 'codium':
      return has(args, '--install-extension', '--uninstall-extension') ? 'toolchain' : null;
    case 'cmake':
      return has(args, '--install') ? 'toolchain' : null;
    case 'ninja':
    case 'meson':
      return pos.includes('install') ? 'toolchain' : null;
    case 'install': {
      // install(1) into a directory on PATH: sudo install -m 755 x /usr/local/bin/
      const dest = pos.at(-1) ?? '';
      return pos.length >= 2 && BIN_DIR.test(dest) ? 'toolchain' : null;
    }
    case 'emerge':
    case 'xbps-install':
    case 'opkg':
    case 'nala':
    case 'pkg':
    case 'eopkg':
    case 'swupd':
      if (report || has(args, '-p', '--pretend', '--noop')) return null;
      if (name === 'emerge' || name === 'xbps-install')
        return pos.length || has(args, '-u', '--update', '-S', '-Su') ? 'system' : null;
      return [
        'install',
        'add',
        'upgrade',
        'update',
        'remove',
        'delete',
        'purge',
        'autoremove',
        'full-upgrade',
        'bundle-add',
        'it',
        'rm',
      ].includes(sub) && !(sub === 'update' && ['nala', 'opkg', 'pkg'].includes(name) && !sub2)
        ? 'system'
        : null;
    case 'softwareupdate':
      return has(args, '-i', '--install', '-a', '--all') ? 'system' : null;
    case 'curl':
    case 'wget': {
      // a download straight into a directory on PATH installs a tool: curl -Lo /usr/local/bin/x URL
      const oi = args.findIndex((a) =>
        name === 'curl'
          ? a === '-o' || a === '--output' || /^-[a-zA-Z]*o$/.test(a)
          : a === '-O' || a === '--output-document' || /^-[a-zA-Z]*O$/.test(a),
      );
      const eq = args.find((a) => a.startsWith('--output=') || a.startsWith('--output-document='));
      const out = oi >= 0 ? args[oi + 1] : eq?.slice(eq.indexOf('=') + 1);
      return out && BIN_DIR.test(out) ? 'toolchain' : null;
    }
    case 'make':
    case 'gmake':
      return pos.some((p) => p === 'install' || p === 'uninstall') && !has(args, '-n', '--dry-run', '--just-print')
        ? 'toolchain'
        : null;
    case 'apt':
    case 'apt-get':
    case 'aptitude':
      if (report || has(args, '-s', '--simulate', '--no-act')) return null;
      return [
        'install',
        'reinstall',
        'remove',
        'purge',
        'autoremove',
        'autopurge',
        'upgrade',
        'full-upgrade',
        'dist-upgrade',
        'build-dep',
        'satisfy',
        'safe-upgrade',
      ].includes(sub)
        ? 'system'
        : null;
    case 'dpkg':
      return args.some(
        (a) =>
          ['-i', '--install', '-r', '--remove', '-P', '--purge', '--unpack', '--configure', '-a'].includes(a) ||
          /^-[a-zA-Z]*i[a-zA-Z]*$/.test(a),
      ) &&
        !has(args, '--dry-run', '--no-act') &&
        !has(args, '-l', '-L', '-s', '-S')
        ? 'system'
        : null;
    case 'snap':
      if (has(args, '--list')) return null;
      return ['install', 'refresh', 'remove', 'revert'].includes(sub) ? 'system' : null;
    case 'dnf':
    case 'yum':
    case 'microdnf':
    case 'tdnf':
      if (report || has(args, '--assumeno')) return null;
      if (['group', 'groups', 'module'].includes(sub))
        return ['install', 'remove', 'upgrade', 'update'].includes(sub2) ? 'system' : null;
      return [
        'install',
        'reinstall',
        'upgrade',
        'update',
        'remove',
        'erase',
        'downgrade',
        'groupinstall',
        'distro-sync',
        'autoremove',
        'localinstall',
      ].includes(sub)
        ? 'system'
        : null;
    case 'rpm':
      return args.some(
        (a) => /^-[iUFe][a-z]*$/.test(a) || ['--install', '--upgrade', '--erase', '--freshen'].includes(a),
      ) && !has(args, '--test')
        ? 'system'
        : null;
    case 'pacman':
    case 'yay':
    case 'paru': {
      const f = args.find((a) => /^-[A-Za-z]+$/.test(a));
      if (!f) return name === 'pacman' ? null : pos.length ? 'system' : 'system';
      const l = f.slice(1);
      if (l[0] === 'S') return /[silgpc]/.test(l.slice(1)) ? null : 'system';
      return l[0] === 'U' || l[0] === 'R' ? 'system' : null;
    }
    case 'zypper':
      return [
        'in',
        'install',
        'up',
        'update',
        'dup',
        'dist-upgrade',
        'rm',
        'remove',
        'patch',
        'si',
        'source-install',
      ].includes(sub) && !has(args, '--dry-run', '-D')
        ? 'system'
        : null;
    case 'apk':
      return ['add', 'del', 'upgrade', 'fix'].includes(sub) && !has(args, '-s', '--simulate') ? 'system' : null;
    case 'flatpak':
      return ['install', 'update', 'uninstall', 'remove'].includes(sub) ? 'system' : null;
    case 'nix-env':
      return args.some((a) => /^-(i|iA|u|e)$/.test(a) || ['--install', '--upgrade', '--uninstall'].includes(a))
        ? 'toolchain'
        : null;
    case 'systemctl':
      return ['enable', 'disable', 'mask', 'unmask', 'link', 'preset', 'edit', 'set-default', 'revert'].includes(sub)
        ? 'system'
        : null;
    case 'launchctl':
      return ['load', 'unload', 'bootstrap', 'bootout', 'enable', 'disable'].includes(sub) ? 'system' : null;
    case 'update-rc.d':
      return 'system';
    case 'crontab':
      if (has(args, '-l', '-h', '--help')) return null;
      return 'system';
    case 'docker':
    case 'podman':
    case 'nerdctl':
      return classifyDocker(args, depth, ctx);
    case 'docker-compose':
    case 'podman-compose':
      return classifyCompose(args);
    case 'hermes': {
      if (report) return null;
      if (sub === 'update') return has(args, '--check', '--plan') ? null : 'remote-code';
      if (sub === 'skills' && ['install', 'update'].includes(sub2)) return 'remote-code';
      if (sub === 'skills' && sub2 === 'tap' && pos[2] === 'add') return 'remote-code';
      if (sub === 'gateway' && ['install', 'uninstall'].includes(sub2)) return 'system';
      if (sub === 'uninstall') return 'system';
      return null;
    }
    case 'playwright':
      if (has(args, '--dry-run')) return null;
      if (sub === 'install-deps') return 'system';
      return sub === 'install' && has(args, '--with-deps') ? 'system' : null;
    case 'wsl':
      return has(args, '--install', '--update') ? 'system' : null;
    case 'deno':
      if (report) return null;
      if (['install', 'uninstall'].includes(sub))
        return has(args, '-g', '--global') || sub === 'uninstall' ? 'toolchain' : 'deps';
      if (['add', 'remove', 'outdated'].includes(sub))
        return sub === 'outdated' && !has(args, '--update') ? null : 'deps';
      return sub === 'upgrade' ? 'toolchain' : null;
    case 'dotnet':
      if (sub === 'tool' && ['install', 'update', 'uninstall'].includes(sub2))
        return has(args, '-g', '--global') ? 'toolchain' : 'deps';
      if (
        (sub === 'add' || sub === 'remove') &&
        (['package', 'reference'].includes(sub2) || ['package', 'reference'].includes(pos[2] ?? ''))
      )
        return 'deps';
      if (sub === 'workload' && ['install', 'update', 'uninstall'].includes(sub2)) return 'toolchain';
      return null;
    case 'nix':
      return sub === 'profile' && ['install', 'upgrade', 'remove'].includes(sub2) ? 'toolchain' : null;
    case 'mix':
      return ['deps.get', 'deps.update'].includes(sub)
        ? 'deps'
        : ['archive.install', 'local.hex', 'local.rebar'].includes(sub)
          ? 'toolchain'
          : null;
    case 'pub':
      return ['get', 'upgrade', 'add'].includes(sub) ? 'deps' : null;
    case 'flutter':
    case 'dart':
      return sub === 'pub' && ['get', 'upgrade', 'add', 'remove'].includes(sub2)
        ? 'deps'
        : sub === 'upgrade'
          ? 'toolchain'
          : null;
    case 'cabal':
    case 'stack':
      return sub === 'install' ? 'toolchain' : null;
    default:
      return null;
  }
}

/** Where a wrapped command runs: `ssh host CMD`, `multipass exec vm -- CMD`, `kubectl exec pod -- CMD`, … */
function through(name: string, args: string[]): { where: string; text: string } | undefined {
  const afterDashes = (from: number): string | undefined => {
    const dd = args.indexOf('--', from);
    return dd >= 0 && dd + 1 < args.length ? args.slice(dd + 1).join(' ') : undefined;
  };
  const sub = args[0];
  switch (name) {
    case 'ssh': {
      let i = 0;
      while (i < args.length && args[i].startsWith('-')) {
        if (/^-[BbcDEeFIiJLlmOopQRSWw]$/.test(args[i])) i++;
        i++;
      }
      const host = args[i];
      const cmd = args.slice(i + 1).join(' ');
      return host && cmd ? { where: `on ${host.replace(/^.*@/, '')}`, text: cmd } : undefined;
    }
    case 'multipass':
    case 'lxc':
    case 'incus':
    case 'pct': {
      if (sub !== 'exec') return undefined;
      const text = afterDashes(1);
      return text ? { where: `in ${name} ${positionals(args.slice(1))[0] ?? ''}`.trim(), text } : undefined;
    }
    case 'kubectl':
    case 'oc': {
      if (sub !== 'exec') return undefined;
      const text = afterDashes(1);
      return text ? { where: `in pod ${positionals(args.slice(1))[0] ?? ''}`.trim(), text } : undefined;
    }
    case 'proot-distro':
    case 'distrobox': {
      if ((name === 'proot-distro' && sub !== 'login') || (name === 'distrobox' && sub !== 'enter')) return undefined;
      const text = afterDashes(1);
      return text ? { where: `in ${name} ${positionals(args.slice(1))[0] ?? ''}`.trim(), text } : undefined;
    }
    case 'su':
    case 'runuser':
    case 'vagrant': {
      const ci = args.findIndex((a) => a === '-c' || a === '--command');
      if (ci >= 0 && args[ci + 1] !== undefined)
        return {
          where:
            name === 'vagrant'
              ? 'in the Vagrant VM'
              : `as ${positionals(args.slice(0, ci)).find((a) => a !== '-') ?? 'root'}`,
          text: args[ci + 1],
        };
      const text = name === 'runuser' ? afterDashes(0) : undefined;
      return text ? { where: 'as another user', text } : undefined;
    }
    case 'wsl': {
      const ei = args.findIndex((a) => a === '-e' || a === '--exec');
      const text = ei >= 0 ? args.slice(ei + 1).join(' ') : afterDashes(0);
      return text ? { where: 'in WSL', text } : undefined;
    }
    default:
      return undefined;
  }
}

/** Command names classifyMore decides (its `switch`, the wrappers of `through`, mkfs.* and `python manage.py`); a unit test keeps it in step. */
export const MORE_NAMES = new Set([
  'addgroup',
  'adduser',
  'apt-mark',
  'awk',
  'chgrp',
  'chmod',
  'chown',
  'chpasswd',
  'chsh',
  'claude',
  'codex',
  'cp',
  'crontab',
  'dd',
  'del',
  'delgroup',
  'deluser',
  'distrobox',
  'dropdb',
  'duckdb',
  'eval',
  'find',
  'firewall-cmd',
  'gawk',
  'gemini',
  'git',
  'gpasswd',
  'groupadd',
  'groupdel',
  'groupmod',
  'helm',
  'hermes',
  'hostnamectl',
  'incus',
  'install',
  'ip6tables',
  'iptables',
  'kubectl',
  'launchctl',
  'ln',
  'localectl',
  'loginctl',
  'lxc',
  'mariadb',
  'mise',
  'mke2fs',
  'mkswap',
  'mongo',
  'mongosh',
  'multipass',
  'mv',
  'mysql',
  'nft',
  'npm',
  'oc',
  'passwd',
  'pct',
  'perl',
  'pip',
  'pip3',
  'pipenv',
  'pm2',
  'pnpm',
  'prisma',
  'proot-distro',
  'psql',
  'pulumi',
  'python',
  'python2',
  'python3',
  'rails',
  'rake',
  'rd',
  'redis-cli',
  'remove-item',
  'rm',
  'rmdir',
  'rtx',
  'ruby',
  'runuser',
  'sed',
  'setfacl',
  'shred',
  'sqlite3',
  'ssh',
  'su',
  'supabase',
  'sysctl',
  'systemctl',
  'tee',
  'terraform',
  'timedatectl',
  'tofu',
  'truncate',
  'ufw',
  'unlink',
  'update-alternatives',
  'useradd',
  'userdel',
  'usermod',
  'vagrant',
  'visudo',
  'wipefs',
  'wsl',
  'yarn',
]);

/**
 * The rules of the destructive and config classes, the widened system class, and the wrappers that run a
 * command elsewhere. `undefined`: not a command these rules decide (the first classifier decides).
 */
function classifyMore(w: string[], depth: number, ctx: ClassifyContext): RiskHit | null | undefined {
  const name = cmdName(w[0]);
  if (!MORE_NAMES.has(name) && !name.startsWith('mkfs')) return undefined;
  const args = w.slice(1);
  const pos = positionals(args);
  const sub = pos[0] ?? '';
  const { short, long } = flagsOf(args);
  if (long.has('--help') || long.has('--version') || (args.length === 1 && (args[0] === '-h' || args[0] === '-V')))
    return undefined;
  const via = through(name, args);
  if (via) {
    const inner = classifyText(via.text, depth + 1, { ...ctx, cwd: undefined });
    return inner ? { class: inner.class, reason: `${inner.reason} (${via.where})` } : null;
  }
  if (/^mkfs(\.\w+)?$/.test(name) || name === 'mke2fs')
    return hit('destructive', `${name} formats a filesystem, erasing what was on it`);
  if (/^python[23]?$/.test(name) && /(^|\/)manage\.py$/.test(sub) && ['flush', 'reset_db'].includes(pos[1] ?? ''))
    return hit('destructive', `manage.py ${pos[1]} deletes all rows of the database`);
  switch (name) {
    case 'rm':
    case 'unlink':
      return rmHit(name, args, ctx);
    case 'rd':
    case 'rmdir':
    case 'del':
      return args.some((a) => /^\/s$/i.test(a)) ? hit('destructive', `${name} /s deletes a directory tree`) : null;
    case 'remove-item':
      return args.some((a) => /^-r(ecurse)?$/i.test(a))
        ? hit('destructive', 'Remove-Item -Recurse deletes a directory tree')
        : null;
    case 'shred':
      return hit('destructive', 'shred overwrites files so they cannot be recovered');
    case 'truncate':
      return hit(
        'destructive',
        `truncate ${operands(args.filter((a, i) => !(args[i - 1] === '-s' || a.startsWith('-s')))).join(' ')} cuts files to a size, dropping their content`.replace(
          / +/g,
          ' ',
        ),
      );
    case 'wipefs':
      return short.has('n') ||
        long.has('--no-act') ||
        !(short.has('a') || long.has('--all') || short.has('o') || long.has('--offset'))
        ? null
        : hit('destructive', 'wipefs -a erases filesystem signatures');
    case 'mkswap':
      return pos.some((p) => BLOCK_DEVICE.test(p)) ? hit('destructive', 'mkswap on a disk device erases it') : null;
    case 'dd': {
      const of = args.find((a) => a.startsWith('of='))?.slice(3);
      if (!of || of === '/dev/null') return null;
      return hit('destructive', `dd of=${of} overwrites ${BLOCK_DEVICE.test(of) ? 'a disk' : 'its target'}`);
    }
    case 'find': {
      const start = resolved(pos[0] && !pos[0].startsWith('(') && !pos[0].startsWith('!') ? pos[0] : '.', ctx);
      const ei = args.findIndex((a) => ['-exec', '-execdir', '-ok', '-okdir'].includes(a));
      const execName = ei >= 0 ? cmdName(args[ei + 1] ?? '') : '';
      const names = args.flatMap((a, i) =>
        ['-name', '-iname', '-path', '-regex'].includes(args[i - 1] ?? '') ? [a] : [],
      );
      const onlyRegen =
        names.length > 0 && names.every((n) => REGEN_NAMES.test(n.replace(/^\*\./, 'x.').replace(/^\*/, '')));
      if (args.includes('-delete') || ['rm', 'shred', 'unlink'].includes(execName)) {
        return onlyRegen
          ? null
          : hit(
              'destructive',
              `find ${args.includes('-delete') ? '-delete' : `-exec ${execName}`} deletes every file it matches`,
            );
      }
      if (['chmod', 'chown', 'chgrp', 'setfacl'].includes(execName) && (protectedPath(start) || ctx.elevated))
        return hit('system', `find ${start} -exec ${execName} changes ownership or permissions under ${start}`);
      return null;
    }
    case 'git':
      return gitHit(args);
    case 'psql':
    case 'mysql':
    case 'mariadb':
    case 'sqlite3':
    case 'duckdb':
    case 'mongo':
    case 'mongosh': {
      const sql = sqlOf(name, args);
      if (DESTRUCTIVE_SQL.test(sql) || /\.(dropDatabase|drop|deleteMany|remove)\(/.test(sql)) {
        const kw = /drop\s+\w+|truncate(?:\s+table)?|delete\s+from|alter\s+table/i.exec(sql)?.[0] ?? 'a drop';
        return hit('destructive', `${name} runs ${kw.toUpperCase().replace(/\s+/g, ' ')} and deletes data`);
      }
      return null;
    }
    case 'redis-cli':
      return args.some((a) => /^flush(all|db)$/i.test(a))
        ? hit('destructive', 'redis-cli FLUSHALL deletes every key')
        : null;
    case 'dropdb':
      return hit('destructive', 'dropdb deletes a database');
    case 'prisma':
      if (sub === 'migrate' && pos[1] === 'reset')
        return hit('destructive', 'prisma migrate reset drops the database and recreates it');
      if (sub === 'db' && pos[1] === 'push' && (long.has('--force-reset') || long.has('--accept-data-loss')))
        return hit(
          'destructive',
          `prisma db push ${long.has('--force-reset') ? '--force-reset' : '--accept-data-loss'} drops tables or columns with their data`,
        );
      return null;
    case 'supabase':
      return sub === 'db' && pos[1] === 'reset'
        ? hit('destructive', 'supabase db reset recreates the database and drops its data')
        : null;
    case 'rails':
    case 'rake':
      return pos.find((p) => /^db:(drop|reset|purge|schema:load|truncate_all)/.test(p))
        ? hit('destructive', `${name} ${pos.find((p) => p.startsWith('db:'))} deletes the database content`)
        : null;
    case 'terraform':
    case 'tofu':
    case 'pulumi':
      if (sub === 'destroy') return hit('destructive', `${name} destroy deletes the managed infrastructure`);
      if (
        sub === 'apply' &&
        (long.has('-auto-approve') ||
          args.includes('-auto-approve') ||
          long.has('--auto-approve') ||
          args.includes('-destroy'))
      )
        return hit('destructive', `${name} apply -auto-approve changes or deletes infrastructure without review`);
      return null;
    case 'kubectl':
    case 'oc':
      return sub === 'delete' ? hit('destructive', `${name} delete deletes cluster resources`) : undefined;
    case 'helm':
      return ['uninstall', 'delete', 'del', 'un'].includes(sub)
        ? hit('destructive', `helm ${sub} removes a release and its resources`)
        : null;
    case 'sed':
    case 'perl':
    case 'ruby':
    case 'awk':
    case 'gawk': {
      const inPlace =
        name === 'awk' || name === 'gawk'
          ? args.some((a, i) => (a === '-i' || a === '--include') && args[i + 1] === 'inplace')
          : args.some((a) => /^-[a-zA-Z]*i/.test(a) || a.startsWith('--in-place'));
      if (!inPlace) return undefined;
      for (const f of pos) {
        const what = configWriteTarget(resolved(f, ctx));
        if (what) return hit('config', `${name} -i rewrites ${f} (${what})`);
      }
      return null;
    }
    case 'tee':
      for (const f of pos) {
        const t = resolved(f, ctx);
        if (BLOCK_DEVICE.test(t)) return hit('destructive', `tee ${f} overwrites a disk`);
        const what = configWriteTarget(t);
        if (what) return hit('config', `tee ${f} writes ${what}`);
      }
      return null;
    case 'cp':
    case 'mv':
    case 'ln':
    case 'install': {
      if (name === 'install' && (short.has('d') || long.has('--directory'))) return null;
      const ops = operands(
        args.filter(
          (a, i) =>
            !(name === 'install' && ['-m', '-o', '-g', '--mode', '--owner', '--group'].includes(args[i - 1] ?? '')),
        ),
      );
      if (ops.length < 2) return name === 'install' ? undefined : null;
      const dest = resolved(ops[ops.length - 1], ctx);
      if (name === 'mv') {
        const gone = ops
          .slice(0, -1)
          .map((o) => resolved(o, ctx))
          .find(
            (o) =>
              /^~\/\.(hermes|ssh|claude|codex|config)\/?$/.test(o) ||
              sweeping(o) ||
              /^\/(etc|usr|var|bin|boot|home)\/?$/.test(o),
          );
        if (gone) return hit('destructive', `mv ${gone} moves the directory away from where it is used`);
      }
      if (BLOCK_DEVICE.test(dest)) return hit('destructive', `${name} onto ${dest} overwrites a disk`);
      const what = configWriteTarget(dest);
      if (what) return hit('config', `${name} … ${ops[ops.length - 1]} replaces ${what}`);
      return name === 'install' ? undefined : null;
    }
    case 'chmod':
    case 'chown':
    case 'chgrp':
    case 'setfacl': {
      const recursive = short.has('R') || long.has('--recursive');
      const targets = (
        name === 'setfacl'
          ? operands(
              args.filter(
                (a, i) => !['-m', '-x', '-M', '-X', '--modify', '--remove', '--set'].includes(args[i - 1] ?? ''),
              ),
            )
          : pos.slice(1)
      ).map((t) => resolved(t, ctx));
      const t = targets.find(protectedPath);
      if (t)
        return hit(
          'system',
          `${name}${recursive ? ' -R' : ''} ${t} changes ${name === 'chmod' || name === 'setfacl' ? 'permissions' : 'ownership'} of a system or home path`,
        );
      return recursive && ctx.elevated
        ? hit(
            'system',
            `sudo ${name} -R changes ${name === 'chmod' || name === 'setfacl' ? 'permissions' : 'ownership'} of a whole tree`,
          )
        : null;
    }
    case 'useradd':
    case 'userdel':
    case 'usermod':
    case 'groupadd':
    case 'groupdel':
    case 'groupmod':
    case 'gpasswd':
    case 'passwd':
    case 'chpasswd':
    case 'adduser':
    case 'deluser':
    case 'addgroup':
    case 'delgroup':
    case 'visudo':
    case 'chsh':
      if (name === 'passwd' && (short.has('S') || long.has('--status'))) return null;
      return hit('system', `${name} changes users, groups or logins of the machine`);
    case 'ufw':
      return ['status', 'show', 'version', 'app'].includes(sub) || !args.length
        ? null
        : hit('system', `ufw ${sub} changes the firewall`);
    case 'iptables':
    case 'ip6tables':
      return args.some((a) => /^-[a-zA-Z]*[LS]$/.test(a) || a === '--list' || a === '--list-rules') || !args.length
        ? null
        : hit('system', `${name} changes the firewall`);
    case 'nft':
      return ['list', 'describe', 'monitor'].includes(sub) || !args.length
        ? null
        : hit('system', 'nft changes the firewall');
    case 'firewall-cmd':
      return args.every((a) => /^--(list|state|get|query|info)/.test(a) || a.startsWith('--zone'))
        ? null
        : hit('system', 'firewall-cmd changes the firewall');
    case 'apt-mark':
      return ['hold', 'unhold', 'auto', 'manual', 'minimize-manual'].includes(sub)
        ? hit('system', `apt-mark ${sub} changes which packages apt upgrades`)
        : null;
    case 'sysctl':
      return short.has('w') ||
        short.has('p') ||
        long.has('--system') ||
        long.has('--load') ||
        pos.some((p) => p.includes('='))
        ? hit('system', 'sysctl changes kernel settings')
        : null;
    case 'hostnamectl':
    case 'timedatectl':
    case 'localectl':
      return sub.startsWith('set-') ? hit('system', `${name} ${sub} changes machine settings`) : null;
    case 'update-alternatives':
      return ['--install', '--set', '--remove', '--remove-all', '--config', '--auto', '--all'].some((f) => long.has(f))
        ? hit('system', 'update-alternatives changes which version of a tool runs')
        : null;
    case 'pm2':
      return ['delete', 'del', 'save', 'startup', 'unstartup', 'kill', 'resurrect'].includes(sub)
        ? hit('system', `pm2 ${sub} changes the processes pm2 keeps running`)
        : null;
    case 'loginctl':
      return ['enable-linger', 'disable-linger'].includes(sub)
        ? hit('system', `loginctl ${sub} changes which user services survive logout`)
        : null;
    case 'crontab':
      if (short.has('l') || short.has('h')) return null;
      if (short.has('r')) return hit('destructive', 'crontab -r deletes every scheduled job of the user');
      return hit(
        'config',
        `crontab ${short.has('e') ? '-e' : args.join(' ') || '-'} rewrites the crontab (scheduled jobs)`,
      );
    case 'systemctl':
      return sub === 'edit' ? hit('config', 'systemctl edit rewrites a systemd unit') : undefined;
    case 'launchctl':
      return sub === 'remove' ? hit('system', 'launchctl remove unregisters a launchd service') : undefined;
    case 'npm':
    case 'pnpm':
    case 'yarn':
    case 'pip':
    case 'pip3': {
      if (sub === 'config' && ['set', 'delete', 'edit', 'unset', 'fix'].includes(pos[1] ?? ''))
        return hit('config', `${name} config ${pos[1]} changes the settings of ${name} for this user`);
      // pnpm prisma migrate reset / pnpm exec x / yarn prisma …: a local binary of the project runs
      if ((name === 'pnpm' || name === 'yarn') && args[0] === sub && (sub === 'exec' || LOCAL_BINS.has(sub))) {
        const from = sub === 'exec' ? 1 : 0;
        return args.length > from ? classifyWords(args.slice(from), depth + 1, ctx) : null;
      }
      return undefined;
    }
    case 'pipenv':
      return ['install', 'uninstall', 'update', 'upgrade', 'sync'].includes(sub) && !long.has('--dry-run')
        ? hit('deps', `pipenv ${sub} ${CLASS_REASON.deps}`)
        : null;
    case 'mise':
    case 'rtx':
      return sub === 'use'
        ? hit(
            'toolchain',
            `${name} use${short.has('g') || long.has('--global') ? ' -g' : ''} installs a tool version and pins it in ${short.has('g') || long.has('--global') ? 'the global' : 'the project'} mise config`,
          )
        : undefined;
    case 'proot-distro':
      return ['install', 'remove', 'reset', 'restore'].includes(sub)
        ? hit('system', `proot-distro ${sub} installs or removes a Linux distribution`)
        : null;
    case 'claude':
    case 'codex':
    case 'gemini': {
      if (
        sub === 'mcp' &&
        ['add', 'add-json', 'remove', 'add-from-claude-desktop', 'install', 'uninstall'].includes(pos[1] ?? '')
      )
        return hit('config', `${name} mcp ${pos[1]} changes the MCP servers the agent loads`);
      if (sub === 'config' && ['set', 'add', 'remove', 'unset'].includes(pos[1] ?? ''))
        return hit('config', `${name} config ${pos[1]} changes the agent's settings`);
      if (sub === 'update' || sub === 'upgrade')
        return hit('remote-code', `${name} ${sub} replaces the agent with a version fetched from the network`);
      if (sub === 'install' || sub === 'migrate-installer')
        return hit('toolchain', `${name} ${sub} installs the agent's own binary`);
      return null;
    }
    case 'hermes': {
      const s2 = pos[1] ?? '';
      if (sub === 'config' && ['set', 'migrate', 'edit', 'reset', 'unset'].includes(s2))
        return hit('config', `hermes config ${s2} rewrites the agent's config.yaml`);
      if (sub === 'model') return hit('config', "hermes model switches the agent's model or provider in config.yaml");
      if (sub === 'doctor' && long.has('--fix')) return hit('config', "hermes doctor --fix rewrites the agent's files");
      if (sub === 'claw' && s2 === 'migrate')
        return hit('config', "hermes claw migrate imports another agent's state into the Hermes home");
      if (
        sub === 'cron' &&
        ['create', 'add', 'edit', 'update', 'remove', 'rm', 'delete', 'pause', 'resume'].includes(s2)
      )
        return hit('config', `hermes cron ${s2} changes the agent's scheduled jobs`);
      if (sub === 'plugins' || sub === 'plugin') {
        if (['install', 'update', 'upgrade'].includes(s2))
          return hit('remote-code', `hermes plugins ${s2} fetches code the agent will load`);
        if (['remove', 'rm', 'uninstall', 'enable', 'disable'].includes(s2))
          return hit('config', `hermes plugins ${s2} changes the plugins the agent loads`);
        return null;
      }
      if (sub === 'mcp' && ['add', 'remove', 'install', 'uninstall'].includes(s2))
        return hit('config', `hermes mcp ${s2} changes the MCP servers the agent loads`);
      return undefined;
    }
    case 'eval':
      // eval "$(curl …)" is remote-code (classifyKnown); eval 'cmd …' runs cmd
      return args.length && !w.some((x) => FETCH_SUBST.test(x))
        ? classifyText(args.join(' '), depth + 1, ctx)
        : undefined;
    default:
      return undefined;
  }
}

const DOCKER_GLOBAL_ARG_OPTS = new Set(['--context', '-c', '-H', '--host', '--config', '-l', '--log-level']);

function classifyDocker(args: string[], depth: number, ctx: ClassifyContext): RiskClass | RiskHit | null {
  let i = 0;
  while (i < args.length && args[i].startsWith('-')) {
    if (DOCKER_GLOBAL_ARG_OPTS.has(args[i])) i++;
    i++;
  }
  const sub = args[i] ?? '';
  const rest = args.slice(i + 1);
  const pos = positionals(rest);
  if (rest.some((a) => a === '--help')) return null;
  switch (sub) {
    case 'pull':
      return pos.some((p) => AGENT_IMAGE.test(p)) ? 'remote-code' : 'system';
    case 'run':
    case 'create':
      return has(rest, '--rm') ? null : 'system';
    case 'rm':
    case 'rmi':
      return 'system';
    case 'volume':
      if (['prune', 'rm', 'remove'].includes(pos[0] ?? ''))
        return hit('destructive', `docker volume ${pos[0]} deletes volumes and the data in them`);
      return null;
    case 'system':
      if (pos[0] === 'prune')
        return hit(
          'destructive',
          `docker system prune${has(rest, '--volumes') ? ' --volumes' : ''} deletes stopped containers, unused images${has(rest, '--volumes') ? ' and volumes' : ''}`,
        );
      return null;
    case 'image':
    case 'container':
    case 'network':
    case 'builder':
      return ['prune', 'rm', 'remove', 'pull'].includes(pos[0] ?? '')
        ? pos[0] === 'pull' && pos.some((p) => AGENT_IMAGE.test(p))
          ? 'remote-code'
          : 'system'
        : null;
    case 'plugin':
      return ['install', 'upgrade', 'rm'].includes(pos[0] ?? '') ? 'system' : null;
    case 'compose':
      return classifyCompose(rest, depth, ctx);
    case 'exec': {
      // docker exec [opts] CONTAINER CMD...
      let j = 0;
      while (j < rest.length && rest[j].startsWith('-')) {
        if (/^(-u|--user|-w|--workdir|-e|--env|--env-file)$/.test(rest[j])) j++;
        j++;
      }
      return classifyWords(rest.slice(j + 1), depth + 1, ctx);
    }
    default:
      return null;
  }
}

const COMPOSE_ARG_OPTS = new Set([
  '-f',
  '--file',
  '-p',
  '--project-name',
  '--profile',
  '--env-file',
  '--project-directory',
  '--ansi',
  '--progress',
  '--parallel',
]);

function classifyCompose(args: string[], depth = 0, ctx: ClassifyContext = {}): RiskClass | RiskHit | null {
  let i = 0;
  while (i < args.length && args[i].startsWith('-')) {
    if (COMPOSE_ARG_OPTS.has(args[i])) i++;
    i++;
  }
  const sub = args[i] ?? '';
  const rest = args.slice(i + 1);
  if (has(rest, '--help', '--dry-run')) return null;
  if (sub === 'pull')
    return positionals(rest).some((p) => /^(hermes|agent-zero|agent0|a0)$/i.test(p) || AGENT_IMAGE.test(p))
      ? 'remote-code'
      : 'system';
  if (sub === 'down' && (has(rest, '-v', '--volumes') || rest.some((a) => /^-[a-z]*v[a-z]*$/.test(a))))
    return hit('destructive', 'docker compose down -v deletes the volumes and their data');
  if (sub === 'exec' || sub === 'run') {
    // docker compose exec [opts] SERVICE CMD…: what runs in the container
    let j = 0;
    while (j < rest.length && rest[j].startsWith('-')) {
      if (/^(-u|--user|-w|--workdir|-e|--env|--index|--name|--entrypoint|-p|--publish|-v|--volume)$/.test(rest[j])) j++;
      j++;
    }
    const inner = rest.length > j + 1 ? classifyWords(rest.slice(j + 1), depth + 1, ctx) : null;
    return inner ? { class: inner.class, reason: `${inner.reason} (in service ${rest[j]})` } : null;
  }
  return ['up', 'down', 'rm', 'create'].includes(sub) ? 'system' : null;
}

/** Short flags of a command (letters of `-abc` clusters) and its long flags (`--force`, `--force=x` as `--force`). */
function flagsOf(args: string[]): { short: Set<string>; long: Set<string> } {
  const short = new Set<string>();
  const long = new Set<string>();
  for (const a of args) {
    if (a === '--') break;
    if (a.startsWith('--')) long.add(a.replace(/=.*$/, ''));
    else if (/^-[A-Za-z]+$/.test(a)) for (const ch of a.slice(1)) short.add(ch);
  }
  return { short, long };
}

/** Operands of a command: positionals, and everything after `--`. */
function operands(args: string[]): string[] {
  const dd = args.indexOf('--');
  return dd < 0 ? positionals(args) : [...positionals(args.slice(0, dd)), ...args.slice(dd + 1)];
}

/** `p` resolved against the chain's `cd` directory when it is relative (for path rules only; no I/O). */
function resolved(p: string, ctx: ClassifyContext): string {
  const n = normalizeWritePath(p);
  if (!ctx.cwd || /^([/~$]|[A-Za-z]:)/.test(n)) return n;
  if (n === '.' || n === './') return ctx.cwd;
  return `${ctx.cwd.replace(/\/+$/, '')}/${n.replace(/^\.\//, '')}`;
}

/** Raw block devices: writing one destroys a disk (Linux and macOS spellings). */
const BLOCK_DEVICE =
  /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|nbd\d|r?disk\d|mapper\/|disk\/by-)/;
/** Directories whose owner or mode matters to the whole machine: the root, system trees, homes and their dot-dirs. */
const PROTECTED_PATH =
  /^(\/|\/\*|~\/?|\/(etc|usr|var|bin|sbin|lib\w*|opt|boot|root|srv|home|Users|Library|System|Applications|snap)(\/.*)?|~\/\.[^/]+(\/.*)?)$/;

function protectedPath(p: string): boolean {
  return PROTECTED_PATH.test(p.replace(/\/+$/, '') || '/') || /(^|\/)\.(hermes|ssh)(\/|$)/.test(p);
}

/**
 * Paths a tool regenerates: build outputs, caches and package folders of a project (relative), lockfiles, and
 * the package caches of the system (`/var/lib/apt/lists/*`, `~/.cache/…`). Deleting them is not data loss.
 */
const REGEN_NAMES =
  /^(build|dist|out|target|coverage|htmlcov|\.coverage|\.next|\.nuxt|\.turbo|\.parcel-cache|\.svelte-kit|\.angular|\.gradle|\.tox|\.nox|\.eggs|\.pytest_cache|\.mypy_cache|\.ruff_cache|__pycache__|\.cache|\.venv|venv|env|\.DS_Store|DerivedData.*|.*\.egg-info|.*\.pyc|.*\.o|.*\.log|package-lock\.json|yarn\.lock|pnpm-lock\.yaml|poetry\.lock|uv\.lock|Cargo\.lock)$/;

function regenerable(p: string): boolean {
  if (/^\/var\/(lib\/apt\/lists|cache)(\/|$)/.test(p) || /^~\/\.(cache|npm\/_cacache)(\/|$)/.test(p)) return true;
  const segs = p
    .replace(/\/+$/, '')
    .split('/')
    .filter((x) => x && x !== '.');
  if (!segs.length) return false;
  if (segs.includes('node_modules') && !/^[/~$]/.test(p)) return true;
  return segs.some((x) => REGEN_NAMES.test(x));
}

/** Temporary paths: deleting a single file there loses nothing (a recursive delete still may: codex#42253). */
function tempPath(p: string): boolean {
  return /^(\/tmp|\/var\/tmp|\/private\/tmp|\/dev\/shm|\$\{?TMPDIR\}?)(\/|$)/.test(p);
}

/** Everything under a directory, the home or the root: `rm -rf *`, `rm -rf ~/`, `rm -rf "$HOME"`, `rm -rf /`. */
function sweeping(p: string): boolean {
  return /^(\/|\/\*|~\/?|~\/\*|\*|\.\/?|\.\/\*|\.\.\/?|\$\{?HOME\}?\/?\*?|\/home\/[^/]+\/?|\/Users\/[^/]+\/?)$/.test(p);
}

/** The verdict of `rm`/`unlink` on its operands (null = only regenerable, temp or plain project files). */
function rmHit(name: string, args: string[], ctx: ClassifyContext): RiskHit | null {
  const { short, long } = flagsOf(args);
  const recursive = short.has('r') || short.has('R') || long.has('--recursive');
  const ops = operands(args).map((o) => resolved(o, ctx));
  const flag = recursive ? (short.has('f') || long.has('--force') ? ' -rf' : ' -r') : short.has('f') ? ' -f' : '';
  if (!ops.length)
    return recursive ? hit('destructive', `${name}${flag} (targets from stdin) deletes files for good`) : null;
  for (const o of ops) {
    if (sweeping(o)) return hit('destructive', `${name}${flag} ${o} deletes everything under it`);
    if (regenerable(o)) continue;
    const what = configWriteTarget(o);
    if (what) return hit('destructive', `${name}${flag} ${o} deletes ${what}`);
    if (recursive) return hit('destructive', `${name}${flag} ${o} deletes files for good`);
    if (tempPath(o)) continue;
    if (/^[/~$]/.test(o) || /\.(db|sqlite3?|kdbx)$/.test(o))
      return hit('destructive', `${name}${flag} ${o} deletes a file outside the project`);
  }
  return null;
}

/** git: history and working-tree rewrites (destructive), global settings (config). */
function gitHit(args: string[]): RiskHit | null | undefined {
  let i = 0;
  while (i < args.length && args[i].startsWith('-')) {
    if (['-C', '-c', '--git-dir', '--work-tree', '--namespace'].includes(args[i])) i++;
    i++;
  }
  const sub = args[i] ?? '';
  const rest = args.slice(i + 1);
  const { short, long } = flagsOf(rest);
  const pos = positionals(rest);
  if (long.has('--help') || short.has('h')) return null;
  switch (sub) {
    case 'reset':
      return long.has('--hard') || long.has('--merge')
        ? hit('destructive', 'git reset --hard discards uncommitted changes')
        : null;
    case 'clean':
      if (short.has('n') || long.has('--dry-run') || short.has('i') || long.has('--interactive')) return null;
      return short.has('f') || long.has('--force')
        ? hit(
            'destructive',
            `git clean ${rest.filter((a) => a.startsWith('-')).join(' ')} deletes untracked files`.trim(),
          )
        : null;
    case 'push':
      if (
        short.has('f') ||
        long.has('--force') ||
        long.has('--force-with-lease') ||
        long.has('--force-if-includes') ||
        long.has('--mirror') ||
        pos.some((p) => p.startsWith('+'))
      ) {
        return hit('destructive', 'git push --force rewrites the remote branch; a restore point cannot undo a push');
      }
      return short.has('d') || long.has('--delete') || pos.some((p) => p.startsWith(':'))
        ? hit('destructive', 'git push --delete deletes a remote branch; a restore point cannot undo a push')
        : null;
    case 'checkout': {
      if (short.has('b') || short.has('B') || long.has('--orphan') || long.has('--detach')) return null;
      const dd = rest.indexOf('--');
      if (short.has('f') || long.has('--force') || (dd >= 0 && rest.length > dd + 1) || pos.includes('.'))
        return hit('destructive', 'git checkout -- <paths> discards uncommitted changes');
      return null;
    }
    case 'restore':
      return (long.has('--staged') || short.has('S')) && !long.has('--worktree') && !short.has('W')
        ? null
        : hit('destructive', 'git restore discards uncommitted changes');
    case 'rm':
      return long.has('--cached') || !(short.has('f') || long.has('--force'))
        ? null
        : hit('destructive', 'git rm -f deletes files and their uncommitted changes');
    case 'stash':
      return ['drop', 'clear'].includes(pos[0] ?? '')
        ? hit('destructive', `git stash ${pos[0]} deletes stashed changes`)
        : null;
    case 'branch':
      return short.has('D') || (long.has('--delete') && (long.has('--force') || short.has('f')))
        ? hit('destructive', 'git branch -D deletes a branch with unmerged commits')
        : null;
    case 'reflog':
      return pos[0] === 'expire' || pos[0] === 'delete'
        ? hit('destructive', `git reflog ${pos[0]} drops the history recovery depends on`)
        : null;
    case 'gc':
      return rest.some((a) => /^--prune=(now|all)$/.test(a))
        ? hit('destructive', 'git gc --prune=now deletes unreachable commits for good')
        : null;
    case 'filter-branch':
    case 'filter-repo':
      return hit('destructive', `git ${sub} rewrites the whole history`);
    case 'update-ref':
      return short.has('d') ? hit('destructive', 'git update-ref -d deletes a ref') : null;
    case 'config': {
      if (!(long.has('--global') || long.has('--system'))) return null;
      if (
        ['--get', '--get-all', '--get-regexp', '--list', '--show-origin', '--show-scope', '--get-urlmatch'].some((f) =>
          long.has(f),
        ) ||
        short.has('l')
      )
        return null;
      if (pos[0] === 'get' || pos[0] === 'list') return null;
      return pos.length >= 2 ||
        long.has('--unset') ||
        long.has('--unset-all') ||
        long.has('--add') ||
        long.has('--replace-all') ||
        pos[0] === 'set' ||
        pos[0] === 'unset'
        ? hit(
            'config',
            `git config ${long.has('--system') ? '--system' : '--global'} changes git settings of every repository`,
          )
        : null;
    }
    default:
      return null;
  }
}

/** SQL statements that delete data (a DROP, a TRUNCATE, a DELETE). */
const DESTRUCTIVE_SQL =
  /\b(?:drop\s+(?:table|database|schema|view|index|user|role|collection)\b|truncate\b(?:\s+table)?\s+[\w"`.]|delete\s+from\b|alter\s+table\s+\S+\s+drop\b)/i;

/** The SQL a database client is asked to run on its command line (`psql -c`, `mysql -e`, `sqlite3 db 'SQL'`). */
function sqlOf(name: string, args: string[]): string {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (
      ['-c', '--command', '-e', '--execute', '--query', '-q', '-cmd', '--eval'].includes(a) &&
      args[i + 1] !== undefined
    )
      out.push(args[++i]);
    else if (/^--(command|execute|query|eval)=/.test(a)) out.push(a.slice(a.indexOf('=') + 1));
  }
  if (name === 'sqlite3' || name === 'duckdb') out.push(...positionals(args).slice(1));
  return out.join('\n');
}

/**
 * Classify a pipeline: fetch-and-run (`curl … | sh`) is remote-code; `curl … | tar -C /usr/local/bin` toolchain;
 * else the highest verdict of its commands, their `$(…)` substitutions and their output redirections
 * (`> ~/.bashrc` is config, `> /dev/sda` destructive).
 */
export function classifyPipeline(p: Pipeline, depth = 0, ctx: ClassifyContext = {}): RiskHit | null {
  const cmds = p.commands.map((c) => unwrap(c.words));
  if (cmds.length > 1 && cmds[0].length && FETCHERS.has(cmdName(cmds[0][0]))) {
    const fetcher = cmdName(cmds[0][0]);
    for (const c of cmds.slice(1)) {
      if (!c.length) continue;
      const n = cmdName(c[0]);
      if (INTERPRETERS.has(n) && !c.slice(1).some((a) => a === '-n')) {
        // `| sh`, `| sh -s -- -y`, `| python3 -`, `| bash -c ...` is still fed the script on stdin when no -c
        if (!c.slice(1).some((a) => /^-[a-z]*c[a-z]*$/.test(a)))
          return hit('remote-code', `${fetcher} … | ${n} runs a script fetched from the network`);
      }
      if (n === 'tar' && c.some((a) => /^\/(usr|opt|bin)|\/\.?local\/bin|\$HOME\/(\.local\/)?bin/.test(a)))
        return hit('toolchain', `${fetcher} … | tar -C … unpacks a fetched binary into PATH`);
    }
  }
  let best: RiskHit | null = null;
  for (const c of p.commands) {
    best = maxHit(best, classifyWords(c.words, depth, ctx));
    for (const { op, target: t } of redirectTargets(c.text)) {
      const target = resolved(t, ctx);
      const head = cmdName(unwrap(c.words)[0] ?? 'output');
      if (BLOCK_DEVICE.test(target)) best = maxHit(best, hit('destructive', `${head} ${op} ${t} overwrites a disk`));
      const what = configWriteTarget(target);
      if (what)
        best = maxHit(best, hit('config', `${head} ${op} ${t} ${op === '>>' ? 'appends to' : 'overwrites'} ${what}`));
    }
    // `$(…)`/backtick substitutions run too: `VERSION=$(npm i -g x)`, `echo "$(pip install x)"`
    if (depth < 4 && /\$\(|`|[<>]\(/.test(c.text))
      for (const inner of substitutions(c.text)) best = maxHit(best, classifyText(inner, depth + 1, ctx));
  }
  return best;
}

/**
 * Classify a whole command string (e.g. the argument of `bash -c`): the highest verdict of its pipelines.
 * A `cd DIR` of the chain sets the directory later relative paths are resolved against.
 */
export function classifyText(text: string, depth = 0, ctx: ClassifyContext = {}): RiskHit | null {
  let best: RiskHit | null = null;
  let local = ctx;
  for (const p of splitCommands(text)) {
    best = maxHit(best, classifyPipeline(p, depth, local));
    const w = p.commands.length === 1 ? unwrap(p.commands[0].words) : [];
    if (w[0] === 'cd' && w[1] && !w[1].startsWith('-')) local = { ...local, cwd: resolved(w[1], local) };
  }
  return best;
}
