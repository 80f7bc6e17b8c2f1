/**
 * Classify one shell command (already split into words) into a risk class.
 * Classes, highest priority first: remote-code > system > toolchain > deps.
 * Rules follow shared/reference/ux-and-code-style.md §3.1 and the labelling rules of
 * shared/cases/risk-corpus/RULES.md (read-only, --dry-run, --check, restart/stop: not risky).
 * Pure functions, no I/O.
 */
import { splitCommands, type Pipeline } from './shell';

export type RiskClass = 'deps' | 'toolchain' | 'system' | 'remote-code';

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
}

/**
 * Every command name classifyWords knows (its `switch`), plus the fetchers that make a pipeline or
 * substitution remote-code. A logical command that names none of them cannot be risky, so the
 * scanner skips it (see MAYBE_RISKY); a unit test keeps this list in step with the switch.
 */
export const COMMAND_NAMES = [
  'apk', 'apt', 'apt-get', 'aptitude', 'asdf', 'brew', 'bun', 'bundle', 'bundler', 'bunx', 'cabal', 'cargo', 'choco', 'composer', 'conda',
  'corepack', 'crontab', 'dart', 'deno', 'dnf', 'docker', 'docker-compose', 'dotnet', 'dpkg', 'flatpak', 'flutter', 'fnm', 'gem', 'gmake', 'go',
  'hermes', 'install-module', 'install-package', 'install-script', 'launchctl', 'make', 'mamba', 'microdnf', 'micromamba', 'mise', 'mix',
  'nerdctl', 'nix', 'nix-env', 'npm', 'npx', 'nvm', 'pacman', 'paru', 'pdm', 'pip', 'pipx', 'playwright', 'pnpm', 'podman', 'podman-compose',
  'poetry', 'pub', 'rpm', 'rtx', 'rustup', 'scoop', 'snap', 'stack', 'systemctl', 'tdnf', 'update-module', 'update-rc.d', 'uv', 'uvx', 'volta',
  'winget', 'wsl', 'yarn', 'yay', 'yum', 'zypper', 'pwsh', 'powershell', 'pyenv', 'rbenv', 'nodenv', 'goenv', 'sdk', 'pixi', 'port', 'mas', 'gh',
  'code', 'code-insiders', 'codium', 'cmake', 'ninja', 'meson', 'install', 'emerge', 'xbps-install', 'opkg', 'nala', 'pkg', 'eopkg', 'swupd',
  'softwareupdate',
  // fetchers: curl … | sh, bash <(curl …), irm … | iex, (New-Object Net.WebClient).DownloadString(…)
  'curl', 'wget', 'irm', 'iwr', 'invoke-restmethod', 'invoke-webrequest', 'downloadstring',
];

/** Quick test: does a command text name any of COMMAND_NAMES (at a word start; case-insensitive)? */
export const MAYBE_RISKY = new RegExp(`(?<![\\w-])(?:${[...COMMAND_NAMES].sort((a, b) => b.length - a.length).map((n) => n.replace(/[.]/g, '\\.')).join('|')})`, 'i');

/** Base name of a path or URL (query and fragment dropped). */
function baseName(p: string): string {
  return p.replace(/[?#].*$/, '').replace(/\\/g, '/').replace(/\/+$/, '').replace(/^.*\//, '');
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

const PRIORITY: Record<RiskClass, number> = { deps: 1, toolchain: 2, system: 3, 'remote-code': 4 };

/** The higher-priority class of two (null = not risky). */
export function maxClass(a: RiskClass | null, b: RiskClass | null): RiskClass | null {
  if (!a) return b;
  if (!b) return a;
  return PRIORITY[a] >= PRIORITY[b] ? a : b;
}

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash', 'fish']);
const INTERPRETERS = new Set([...SHELLS, 'python', 'python3', 'python2', 'perl', 'ruby', 'node', 'iex', 'invoke-expression', 'pwsh', 'powershell']);
const FETCHERS = new Set(['curl', 'wget', 'irm', 'iwr', 'invoke-restmethod', 'invoke-webrequest', 'fetch']);
const AGENT_IMAGE = /(agent0ai|frdel)\/agent-zero|nousresearch\/hermes/i;
/** A directory on PATH where installed tools live (for `install`, `curl -o`, `| tar -C`). */
const BIN_DIR = /^(\/usr(\/local)?\/s?bin|\/opt\/[^/]+\/bin|\/bin|\/sbin|(~|\$HOME|\$\{HOME\})\/(\.local\/)?bin)(\/|$)/;
const FETCH_SUBST = /(\$\(|<\(|`)\s*(curl|wget|irm|iwr|invoke-restmethod|invoke-webrequest)\b/i;
/** Local devDependency binaries that `npx` runs without fetching (heuristic; not I/O). */
const LOCAL_BINS = new Set(['tsc', 'tsx', 'ts-node', 'eslint', 'prettier', 'mocha', 'jest', 'vitest', 'esbuild', 'vite', 'webpack', 'rollup', 'nodemon', 'vsce', 'playwright', 'changeset', 'lerna', 'nx', 'turbo']);
const REPORT_FLAGS = new Set(['--dry-run', '--dryrun', '--help', '-h', '--version', '-V', '--simulate', '--just-print', '--no-act', '--recon']);

/** Normalised command name: basename, lower case, without .exe / .cmd and a version suffix for pip/python (pip3.12 → pip3). */
export function cmdName(w: string): string {
  let n = w.replace(/^.*[\\/]/, '').toLowerCase().replace(/\.(exe|cmd|bat|ps1)$/, '');
  n = n.replace(/^(pip|python)(\d+)(\.\d+)?$/, '$1$2');
  return n;
}

const SUDO_ARG_OPTS = new Set(['-u', '-g', '-C', '-D', '-p', '-r', '-t', '-U', '-h', '-T', '--user', '--group', '--chdir']);
const KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', '!', '{', '}', '(', ')', 'time', 'exec', 'nohup', 'builtin', 'esac']);

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

/** Classify the words of one simple command. @returns the class, or null when not risky. */
export function classifyWords(input: string[], depth = 0, ctx: ClassifyContext = {}): RiskClass | null {
  if (depth > 4) return null;
  let w = unwrap(input);
  if (!w.length) return null;
  const elevated = ctx.elevated || input.slice(0, input.length - w.length).some((x) => ['sudo', 'doas', 'run0'].includes(cmdName(x)));
  // an interpreter named by a variable or notebook interpolation: `{sys.executable} -m pip`, `$PYTHON -m pip`
  if (/^(\{[^}]*\}|\$\{?[A-Za-z_][\w.]*\}?|\$\([A-Za-z_][\w.]*\))$/.test(w[0]) && w[1] === '-m') w = ['python', ...w.slice(1)];
  const name = cmdName(w[0]);
  const args = w.slice(1);
  const pos = positionals(args);
  const sub = pos[0] ?? '';
  const sub2 = pos[1] ?? '';
  const report = args.some((a) => REPORT_FLAGS.has(a));

  // Fetched code run through a substitution: bash <(curl ...), sh -c "$(curl ...)", eval "$(wget ...)", python3 <(curl ...)
  if ((INTERPRETERS.has(name) || name === 'eval' || name === 'source' || name === '.') && w.some((x) => FETCH_SUBST.test(x))) return 'remote-code';
  // running an installer an earlier command of the file downloaded
  if (runsDownloaded(w, ctx)) return 'remote-code';
  if ((name === 'iex' || name === 'invoke-expression') && /\b(irm|iwr|invoke-restmethod|invoke-webrequest|downloadstring)\b/i.test(args.join(' '))) {
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
      if (['install', 'i', 'in', 'ins', 'inst', 'insta', 'instal', 'isnt', 'isntall', 'add', 'ci', 'clean-install', 'install-clean', 'update', 'up', 'upgrade', 'udpate', 'uninstall', 'un', 'unlink', 'remove', 'rm', 'r'].includes(sub)) {
        return global ? 'toolchain' : 'deps';
      }
      return null;
    }
    case 'pnpm': {
      if (report) return null;
      if (['dlx', 'create'].includes(sub)) return 'remote-code';
      if (['install', 'i', 'add', 'update', 'up', 'upgrade', 'remove', 'rm', 'uninstall', 'un', 'link', 'ln'].includes(sub)) {
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
      if (['install', 'i', 'add', 'a', 'update', 'remove', 'rm'].includes(sub)) return has(args, '-g', '--global') ? 'toolchain' : 'deps';
      return null;
    }
    case 'bunx':
    case 'uvx':
      return report && !pos.length ? null : 'remote-code';
    case 'npx': {
      if (!pos.length) return null;
      const own = args.slice(0, args.indexOf(sub)); // npx's own options come before the package
      const fetches = has(own, '-y', '--yes', '-p', '--package') || /.@/.test(sub) || !(LOCAL_BINS.has(sub) || ctx.localBins?.has(sub));
      if (fetches) return 'remote-code';
      return classifyWords(args.slice(args.indexOf(sub)), depth + 1, ctx);
    }
    case 'pip':
    case 'pip2':
    case 'pip3': {
      if (report) return null;
      // sudo pip writes the OS Python's site-packages (the distribution's packages): system
      if (sub === 'install') return has(args, '--user') ? 'toolchain' : elevated && !has(args, '--target', '-t', '--prefix', '--root') ? 'system' : 'deps';
      if (sub === 'uninstall') return elevated ? 'system' : 'deps';
      return null;
    }
    case 'python':
    case 'python2':
    case 'python3':
    case 'py': {
      const mi = args.indexOf('-m');
      if (mi >= 0 && args[mi + 1]) return classifyWords(args.slice(mi + 1), depth + 1, elevated ? { ...ctx, elevated } : ctx);
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
      return !report && ['install', 'inject', 'upgrade', 'upgrade-all', 'reinstall', 'reinstall-all', 'uninstall', 'uninstall-all', 'upgrade-shared'].includes(sub) ? 'toolchain' : null;
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
      if (['toolchain', 'component', 'target', 'self'].includes(sub) && ['install', 'add', 'remove', 'uninstall', 'update'].includes(sub2)) return 'toolchain';
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
      return ['install', 'reinstall', 'upgrade', 'uninstall', 'remove', 'rm', 'link', 'unlink'].includes(sub) ? 'toolchain' : null;
    case 'scoop':
    case 'winget':
    case 'choco':
      return ['install', 'upgrade', 'update', 'uninstall', 'remove'].includes(sub) && !(name === 'scoop' && sub === 'update' && !sub2) ? 'toolchain' : null;
    case 'install-module':
    case 'install-package':
    case 'update-module':
    case 'install-script':
      return 'toolchain';
    case 'pwsh':
    case 'powershell': {
      // powershell -c "irm … | iex" / -Command …: classify the command text
      const ci = args.findIndex((a) => /^-(c|command|encodedcommand)$/i.test(a));
      return ci >= 0 && args[ci + 1] !== undefined && !/^-encodedcommand$/i.test(args[ci]) ? classifyText(args.slice(ci + 1).join(' '), depth + 1, ctx) : null;
    }
    case 'pyenv':
    case 'rbenv':
    case 'nodenv':
    case 'goenv':
    case 'sdk':
      return ['install', 'uninstall'].includes(sub) || (name === 'sdk' && ['upgrade', 'selfupdate'].includes(sub)) ? 'toolchain' : null;
    case 'pixi':
      if (sub === 'global') return ['install', 'upgrade', 'remove', 'uninstall', 'add'].includes(sub2) ? 'toolchain' : null;
      return ['add', 'install', 'update', 'upgrade', 'remove'].includes(sub) ? 'deps' : sub === 'self-update' ? 'toolchain' : null;
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
      if (name === 'emerge' || name === 'xbps-install') return pos.length || has(args, '-u', '--update', '-S', '-Su') ? 'system' : null;
      return ['install', 'add', 'upgrade', 'update', 'remove', 'delete', 'purge', 'autoremove', 'full-upgrade', 'bundle-add', 'it', 'rm'].includes(sub) && !(sub === 'update' && ['nala', 'opkg', 'pkg'].includes(name) && !sub2) ? 'system' : null;
    case 'softwareupdate':
      return has(args, '-i', '--install', '-a', '--all') ? 'system' : null;
    case 'curl':
    case 'wget': {
      // a download straight into a directory on PATH installs a tool: curl -Lo /usr/local/bin/x URL
      const oi = args.findIndex((a) => (name === 'curl' ? a === '-o' || a === '--output' || /^-[a-zA-Z]*o$/.test(a) : a === '-O' || a === '--output-document' || /^-[a-zA-Z]*O$/.test(a)));
      const eq = args.find((a) => a.startsWith('--output=') || a.startsWith('--output-document='));
      const out = oi >= 0 ? args[oi + 1] : eq?.slice(eq.indexOf('=') + 1);
      return out && BIN_DIR.test(out) ? 'toolchain' : null;
    }
    case 'make':
    case 'gmake':
      return pos.some((p) => p === 'install' || p === 'uninstall') && !has(args, '-n', '--dry-run', '--just-print') ? 'toolchain' : null;
    case 'apt':
    case 'apt-get':
    case 'aptitude':
      if (report || has(args, '-s', '--simulate', '--no-act')) return null;
      return ['install', 'reinstall', 'remove', 'purge', 'autoremove', 'autopurge', 'upgrade', 'full-upgrade', 'dist-upgrade', 'build-dep', 'satisfy', 'safe-upgrade'].includes(sub) ? 'system' : null;
    case 'dpkg':
      return args.some((a) => ['-i', '--install', '-r', '--remove', '-P', '--purge', '--unpack', '--configure', '-a'].includes(a) || /^-[a-zA-Z]*i[a-zA-Z]*$/.test(a)) && !has(args, '--dry-run', '--no-act') && !has(args, '-l', '-L', '-s', '-S')
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
      if (['group', 'groups', 'module'].includes(sub)) return ['install', 'remove', 'upgrade', 'update'].includes(sub2) ? 'system' : null;
      return ['install', 'reinstall', 'upgrade', 'update', 'remove', 'erase', 'downgrade', 'groupinstall', 'distro-sync', 'autoremove', 'localinstall'].includes(sub) ? 'system' : null;
    case 'rpm':
      return args.some((a) => /^-[iUFe][a-z]*$/.test(a) || ['--install', '--upgrade', '--erase', '--freshen'].includes(a)) && !has(args, '--test') ? 'system' : null;
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
      return ['in', 'install', 'up', 'update', 'dup', 'dist-upgrade', 'rm', 'remove', 'patch', 'si', 'source-install'].includes(sub) && !has(args, '--dry-run', '-D') ? 'system' : null;
    case 'apk':
      return ['add', 'del', 'upgrade', 'fix'].includes(sub) && !has(args, '-s', '--simulate') ? 'system' : null;
    case 'flatpak':
      return ['install', 'update', 'uninstall', 'remove'].includes(sub) ? 'system' : null;
    case 'nix-env':
      return args.some((a) => /^-(i|iA|u|e)$/.test(a) || ['--install', '--upgrade', '--uninstall'].includes(a)) ? 'toolchain' : null;
    case 'systemctl':
      return ['enable', 'disable', 'mask', 'unmask', 'link', 'preset', 'edit', 'set-default', 'revert'].includes(sub) ? 'system' : null;
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
      if (['install', 'uninstall'].includes(sub)) return has(args, '-g', '--global') || sub === 'uninstall' ? 'toolchain' : 'deps';
      if (['add', 'remove', 'outdated'].includes(sub)) return sub === 'outdated' && !has(args, '--update') ? null : 'deps';
      return sub === 'upgrade' ? 'toolchain' : null;
    case 'dotnet':
      if (sub === 'tool' && ['install', 'update', 'uninstall'].includes(sub2)) return has(args, '-g', '--global') ? 'toolchain' : 'deps';
      if ((sub === 'add' || sub === 'remove') && (['package', 'reference'].includes(sub2) || ['package', 'reference'].includes(pos[2] ?? ''))) return 'deps';
      if (sub === 'workload' && ['install', 'update', 'uninstall'].includes(sub2)) return 'toolchain';
      return null;
    case 'nix':
      return sub === 'profile' && ['install', 'upgrade', 'remove'].includes(sub2) ? 'toolchain' : null;
    case 'mix':
      return ['deps.get', 'deps.update'].includes(sub) ? 'deps' : ['archive.install', 'local.hex', 'local.rebar'].includes(sub) ? 'toolchain' : null;
    case 'pub':
      return ['get', 'upgrade', 'add'].includes(sub) ? 'deps' : null;
    case 'flutter':
    case 'dart':
      return sub === 'pub' && ['get', 'upgrade', 'add', 'remove'].includes(sub2) ? 'deps' : sub === 'upgrade' ? 'toolchain' : null;
    case 'cabal':
    case 'stack':
      return sub === 'install' ? 'toolchain' : null;
    default:
      return null;
  }
}

const DOCKER_GLOBAL_ARG_OPTS = new Set(['--context', '-c', '-H', '--host', '--config', '-l', '--log-level']);

function classifyDocker(args: string[], depth: number, ctx: ClassifyContext): RiskClass | null {
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
    case 'image':
    case 'container':
    case 'volume':
    case 'network':
    case 'system':
    case 'builder':
      return ['prune', 'rm', 'remove', 'pull'].includes(pos[0] ?? '') ? (pos[0] === 'pull' && pos.some((p) => AGENT_IMAGE.test(p)) ? 'remote-code' : 'system') : null;
    case 'plugin':
      return ['install', 'upgrade', 'rm'].includes(pos[0] ?? '') ? 'system' : null;
    case 'compose':
      return classifyCompose(rest);
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

const COMPOSE_ARG_OPTS = new Set(['-f', '--file', '-p', '--project-name', '--profile', '--env-file', '--project-directory', '--ansi', '--progress', '--parallel']);

function classifyCompose(args: string[]): RiskClass | null {
  let i = 0;
  while (i < args.length && args[i].startsWith('-')) {
    if (COMPOSE_ARG_OPTS.has(args[i])) i++;
    i++;
  }
  const sub = args[i] ?? '';
  const rest = args.slice(i + 1);
  if (has(rest, '--help', '--dry-run')) return null;
  if (sub === 'pull') return positionals(rest).some((p) => /^(hermes|agent-zero|agent0|a0)$/i.test(p) || AGENT_IMAGE.test(p)) ? 'remote-code' : 'system';
  return ['up', 'down', 'rm', 'create'].includes(sub) ? 'system' : null;
}

/** Classify a pipeline: fetch-and-run (`curl … | sh`) is remote-code; `curl … | tar -C /usr/local/bin` toolchain; else the highest class of its commands. */
export function classifyPipeline(p: Pipeline, depth = 0, ctx: ClassifyContext = {}): RiskClass | null {
  const cmds = p.commands.map((c) => unwrap(c.words));
  if (cmds.length > 1 && cmds[0].length && FETCHERS.has(cmdName(cmds[0][0]))) {
    for (const c of cmds.slice(1)) {
      if (!c.length) continue;
      const n = cmdName(c[0]);
      if (INTERPRETERS.has(n) && !c.slice(1).some((a) => a === '-n')) {
        // `| sh`, `| sh -s -- -y`, `| python3 -`, `| bash -c ...` is still fed the script on stdin when no -c
        if (!c.slice(1).some((a) => /^-[a-z]*c[a-z]*$/.test(a))) return 'remote-code';
      }
      if (n === 'tar' && c.some((a) => /^\/(usr|opt|bin)|\/\.?local\/bin|\$HOME\/(\.local\/)?bin/.test(a))) return 'toolchain';
    }
  }
  let cls: RiskClass | null = null;
  for (const c of p.commands) {
    cls = maxClass(cls, classifyWords(c.words, depth, ctx));
    // `$(…)`/backtick substitutions run too: `VERSION=$(npm i -g x)`, `echo "$(pip install x)"`
    if (depth < 4 && /\$\(|`|[<>]\(/.test(c.text)) for (const inner of substitutions(c.text)) cls = maxClass(cls, classifyText(inner, depth + 1, ctx));
  }
  return cls;
}

/** Classify a whole command string (e.g. the argument of `bash -c`): the highest class of its pipelines. */
export function classifyText(text: string, depth = 0, ctx: ClassifyContext = {}): RiskClass | null {
  let cls: RiskClass | null = null;
  for (const p of splitCommands(text)) cls = maxClass(cls, classifyPipeline(p, depth, ctx));
  return cls;
}
