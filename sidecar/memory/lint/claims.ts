/**
 * Claims about the machine that a memory entry makes, for the stale rule: paths ("key in
 * ~/.ssh/deploy_ed25519"), commands (`pnpm test` in backticks; "uses Docker"), tool versions
 * ("Node 18", "python 3.11", "pnpm@8") and the operating system ("Debian 12"). Pure: extraction
 * only; run.ts probes the machine, and rules.ts compares.
 */

/** One claim. `key` is how the machine facts are looked up. */
export type Claim =
  | { kind: 'path'; key: string; raw: string }
  | { kind: 'command'; key: string; raw: string }
  | { kind: 'version'; key: string; version: string; raw: string }
  | { kind: 'os'; key: string; version: string; raw: string };

/**
 * Tools whose version a memory may state, and the command that prints it. The probe runs the
 * argv with a short timeout and takes the first version-looking string of stdout+stderr.
 */
export const VERSION_COMMANDS = new Map<string, string[]>(
  Object.entries({
    node: ['node', '--version'],
    nodejs: ['node', '--version'],
    npm: ['npm', '--version'],
    pnpm: ['pnpm', '--version'],
    yarn: ['yarn', '--version'],
    bun: ['bun', '--version'],
    deno: ['deno', '--version'],
    python: ['python3', '--version'],
    python3: ['python3', '--version'],
    pip: ['pip3', '--version'],
    pip3: ['pip3', '--version'],
    uv: ['uv', '--version'],
    docker: ['docker', '--version'],
    podman: ['podman', '--version'],
    git: ['git', '--version'],
    go: ['go', 'version'],
    golang: ['go', 'version'],
    rustc: ['rustc', '--version'],
    cargo: ['cargo', '--version'],
    rust: ['rustc', '--version'],
    java: ['java', '-version'],
    ruby: ['ruby', '--version'],
    gcc: ['gcc', '--version'],
    clang: ['clang', '--version'],
    cmake: ['cmake', '--version'],
    terraform: ['terraform', '--version'],
    kubectl: ['kubectl', 'version', '--client'],
    helm: ['helm', 'version', '--short'],
    psql: ['psql', '--version'],
    postgres: ['psql', '--version'],
    sqlite3: ['sqlite3', '--version'],
    nginx: ['nginx', '-v'],
    php: ['php', '--version'],
    perl: ['perl', '--version'],
    tsc: ['tsc', '--version'],
    typescript: ['tsc', '--version'],
    ansible: ['ansible', '--version'],
    ffmpeg: ['ffmpeg', '-version'],
    jq: ['jq', '--version'],
    make: ['make', '--version'],
    curl: ['curl', '--version'],
    rg: ['rg', '--version'],
    tmux: ['tmux', '-V'],
    hermes: ['hermes', '--version'],
  }),
);

/** Binary name of a tool word (node → node, python → python3, postgres → psql ...). */
export function binaryOf(tool: string): string {
  return VERSION_COMMANDS.get(tool)?.[0] ?? tool;
}

const OS_NAMES = ['debian', 'ubuntu', 'fedora', 'alpine', 'centos', 'rhel', 'rocky', 'almalinux', 'opensuse', 'arch'];

/** Words after which a tool name is a claim that the tool is installed ("with Docker", "uses pnpm"). */
const USES =
  /\b(?:uses?|using|with|has|have|installed|runs?|via|through)\s+(?:the\s+)?([a-z][a-z0-9+-]*)\b(?!\s+(?:keybindings?|bindings|mode|style|theme|plugin|extension|syntax|format|conventions?|project|repo|workflow|file|config|image|compose|desktop|account|hub|api))/gi;

/** Commands that are shell builtins or too generic to check. */
const NOT_COMMANDS = new Set([
  'cd',
  'echo',
  'export',
  'set',
  'source',
  'if',
  'for',
  'then',
  'true',
  'false',
  'sudo',
  'env',
  'exit',
  'the',
  'a',
  'run',
  'test',
  'and',
  'or',
  'not',
]);

/** Paths that are examples or patterns, not claims (globs, placeholders, URLs' paths). */
function plausiblePath(p: string): boolean {
  if (/[*?<>{}$]/.test(p)) return false;
  if (p.startsWith('~/') || p === '~') return p.length > 2;
  if (!p.startsWith('/')) return false;
  const parts = p.split('/').filter(Boolean);
  return parts.length >= 2 || /^\/(etc|opt|srv|var|usr|home|root|tmp|mnt|data)$/.test(p);
}

/** Device words that name a machine ("Alice's laptop", "on the prod server"). */
const DEVICE =
  '(?:laptop|desktop|pc|mac|macbook|imac|phone|iphone|ipad|tablet|workstation|machine|computer|server|box|vm|host|nas|router|raspberry\\s+pi|pi|cluster)';
/**
 * An entry about another machine than the agent's: a machine that belongs to someone ("Alice's laptop",
 * "her phone", "my desktop"), or a named one ("on the prod server", "the staging box", "another
 * machine", "remote host"). Its paths, commands, versions and OS are that machine's, so none is
 * checked against this one (the stale rule's suggestion asks to name the machine for this reason).
 */
const OTHER_MACHINE = new RegExp(
  [
    `\\b(?:[A-Z][\\w-]*'s|user's|his|her|their|my|your|our)\\s+(?:(?:old|new|own|work|home|personal|gaming)\\s+)?${DEVICE}s?\\b`,
    `\\b(?:the\\s+)?(?:prod|production|staging|remote|build|ci|backup|home|work|other|dev|test)\\s+${DEVICE}s?\\b`,
    `\\banother\\s+${DEVICE}\\b`,
  ].join('|'),
  'i',
);

/** Whether an entry is about another machine than the agent's (OTHER_MACHINE): its claims are not checked. */
export function aboutAnotherMachine(text: string): boolean {
  return OTHER_MACHINE.test(text);
}

/** Extract the machine claims of one entry text (deduplicated by kind + key); none for an entry about another machine. */
export function extractClaims(text: string): Claim[] {
  if (aboutAnotherMachine(text)) return [];
  const out: Claim[] = [];
  const seen = new Set<string>();
  const add = (c: Claim): void => {
    const k = `${c.kind}:${c.key}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(c);
    }
  };
  // Paths: absolute or home-relative, not inside URLs.
  const noUrls = text.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, ' ');
  for (const m of noUrls.matchAll(/(?:^|[\s(`'"=:,])((?:~\/|\/)[\w.@%+~/-]*[\w@%+~-])/g)) {
    const p = m[1];
    if (plausiblePath(p)) add({ kind: 'path', key: p, raw: p });
  }
  // Commands: the first word of inline code spans.
  for (const m of text.matchAll(/`([^`\n]+)`/g)) {
    const first =
      m[1]
        .trim()
        .split(/\s+/)[0]
        ?.replace(/^sudo$/, '') ?? '';
    const cmd = /^[a-z][a-z0-9._+-]*$/i.test(first) ? first.toLowerCase() : '';
    if (cmd && !NOT_COMMANDS.has(cmd) && !cmd.includes('.')) add({ kind: 'command', key: cmd, raw: m[0] });
  }
  const lower = text.toLowerCase();
  // Tool + version: "Node 20", "node v18.19", "Python 3.11", "pnpm@8", "Go 1.22".
  for (const m of lower.matchAll(
    /\b([a-z][a-z0-9+]*)(?:\.js)?(?:\s+(?:version\s+)?|@|\s*v)(v?\d+(?:\.\d+){0,3})\b(?![.\d]*\s*(?:%|gb|mb|kb|ms|s\b|chars?|lines?|min|hours?|days?|years?|cores?|items?))/g,
  )) {
    const tool = m[1];
    const version = m[2].replace(/^v/, '');
    if (OS_NAMES.includes(tool)) add({ kind: 'os', key: tool, version, raw: m[0] });
    else if (VERSION_COMMANDS.has(tool)) add({ kind: 'version', key: tool, version, raw: m[0] });
  }
  // "uses Docker", "with pnpm": a known tool named as used or installed.
  for (const m of lower.matchAll(USES)) {
    const tool = m[1];
    if (
      VERSION_COMMANDS.has(tool) &&
      !out.some((c) => (c.kind === 'version' || c.kind === 'command') && binaryOf(c.key) === binaryOf(tool))
    ) {
      add({ kind: 'command', key: tool, raw: m[0].trim() });
    }
  }
  return out;
}

/**
 * Whether a claimed version agrees with the machine's: the claimed components are a prefix of the
 * actual ones ("20" agrees with "20.19.2"; "3.11" with "3.11.2"; "18" does not with "20.1.0").
 */
export function versionAgrees(claimed: string, actual: string): boolean {
  const c = claimed.split('.');
  const a = actual.split('.');
  return c.every((x, i) => a[i] !== undefined && Number(x) === Number(a[i]));
}

/** First version-looking string in a tool's output ("v20.19.2" → "20.19.2"; "Python 3.11.2" → "3.11.2"). */
export function parseVersion(output: string): string | undefined {
  const m = /\bv?(\d+\.\d+(?:\.\d+)?)/.exec(output);
  return m?.[1];
}
