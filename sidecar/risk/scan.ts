/**
 * Find risky commands in the text of a file, by file kind. Pure functions, no I/O.
 *
 * File kinds (from the name, else the content): shell (*.sh, *.bash, *.zsh, *.ksh, rc files, a `#!`
 * naming a shell), markdown (*.md incl. SKILL.md: shell, console `$ `, PowerShell and untagged fences),
 * powershell (*.ps1), dockerfile (Dockerfile/Containerfile[.*], *.dockerfile: RUN), makefile
 * (Makefile, *.mk: tab recipes), justfile, compose (compose.yaml, docker-compose*.yml, or YAML with
 * `services:`: command/entrypoint), workflow (.github/workflows/*.yml, action.yml, or YAML with
 * `jobs:`+`steps:`: run), notebook (*.ipynb: `!`/`%pip`/`%conda`/`%%bash`), notebook-cell (the text of
 * one cell, for cell documents), package-json (scripts), devcontainer (devcontainer.json *Command),
 * vscode-tasks (.vscode/tasks.json).
 *
 * One finding per logical command (see text.ts): a `&&`/`||`/`;`/`|` chain is one command, with the
 * highest class of its risky parts (remote-code > destructive > system > config > toolchain > deps); `risk`
 * names the parts, `reason` says in one line why the top part is risky.
 */
import type { RiskFinding } from '../protocol';
import {
  CLASS_REASON,
  classifyPipeline,
  maxHit,
  MAYBE_CONFIG_WRITE,
  MAYBE_RISKY,
  noteDownloads,
  RISK_CLASSES,
  unwrap,
  type ClassifyContext,
  type RiskClass,
  type RiskHit,
} from './classify';
import { splitCommands } from './shell';
import {
  dockerCommands,
  expand,
  justCommands,
  lines,
  makeCommands,
  markdownCommands,
  numbered,
  psCommands,
  shellCommands,
  type LogicalCommand,
} from './text';
import {
  composeCommands,
  devcontainerCommands,
  looksLikeCompose,
  looksLikeWorkflow,
  notebookCellCommands,
  notebookCommands,
  packageJsonBins,
  packageJsonCommands,
  tasksJsonCommands,
  workflowCommands,
} from './structured';

export type { LogicalCommand } from './text';

/** The file kinds the scanner reads; `unknown` yields no findings. */
export const FILE_KINDS = [
  'shell',
  'markdown',
  'powershell',
  'dockerfile',
  'makefile',
  'justfile',
  'compose',
  'workflow',
  'notebook',
  'notebook-cell',
  'package-json',
  'devcontainer',
  'vscode-tasks',
  'unknown',
] as const;
export type FileKind = (typeof FILE_KINDS)[number];

/** One risky part of a logical command (a pipeline of its chain). */
export interface RiskyPart {
  /** The pipeline's text, e.g. `pnpm dlx @example/icons-cli@latest sync`. */
  text: string;
  class: RiskClass;
  /** Why, in one line: `remote-code: pnpm dlx runs code fetched from the network`. */
  reason: string;
}

/** A risky logical command: what one CodeLens pair runs (the whole logical command). */
export interface RiskyCommand extends LogicalCommand {
  /** Highest class of its parts. */
  class: RiskClass;
  /** The risky parts, in order. */
  parts: RiskyPart[];
  /** Reason text naming the risky part(s), e.g. `pnpm dlx x: runs code fetched from the network`. */
  risk: string;
  /** One line, the reason of the highest part: `destructive: git reset --hard discards uncommitted changes`. */
  reason: string;
  kind: FileKind;
}

export { CLASS_REASON };

/**
 * File kind from the path (only the base name and a `.github/workflows/` or `.vscode/` parent count)
 * and, when the name does not decide, the text (a `#!` line; YAML with `services:` or `jobs:`).
 */
export function fileKind(file: string, text: string): FileKind {
  const norm = file.replace(/\\/g, '/');
  const base = norm.replace(/^.*\//, '');
  const lower = base.toLowerCase();
  if (
    /\.(sh|bash|zsh|ksh|command)$/.test(lower) ||
    ['.bashrc', '.zshrc', '.profile', '.bash_profile', '.zprofile', '.envrc'].includes(lower)
  )
    return 'shell';
  if (/\.(md|markdown|mdx|mdown|mkd|qmd)$/.test(lower)) return 'markdown';
  if (/^(dockerfile|containerfile)(\..*)?$/.test(lower) || /\.(dockerfile|containerfile)$/.test(lower))
    return 'dockerfile';
  if (/^(gnu)?makefile$/.test(lower) || lower.endsWith('.mk')) return 'makefile';
  if (lower === 'justfile' || lower === '.justfile' || lower.endsWith('.just')) return 'justfile';
  if (/\.(ps1|psm1)$/.test(lower)) return 'powershell';
  if (lower.endsWith('.ipynb')) return 'notebook';
  if (lower === 'package.json') return 'package-json';
  if (lower === 'devcontainer.json' || lower === '.devcontainer.json') return 'devcontainer';
  if (lower === 'tasks.json' && (/(^|\/)\.vscode\//.test(norm) || /"tasks"\s*:/.test(text))) return 'vscode-tasks';
  if (/\.ya?ml$/.test(lower)) {
    if (/(^|\/)\.github\/workflows\//.test(norm) || /^action\.ya?ml$/.test(lower)) return 'workflow';
    if (/(^|[-._])compose([-._][^/]*)?\.ya?ml$/.test(lower)) return 'compose';
    if (looksLikeWorkflow(text)) return 'workflow';
    if (looksLikeCompose(text)) return 'compose';
    return 'unknown';
  }
  const nl = text.indexOf('\n');
  const first = nl >= 0 ? text.slice(0, nl) : text;
  if (/^#!.*\b(ba|z|k|da|a)?sh\b/.test(first)) return 'shell';
  if (/^#!.*\b(pwsh|powershell)\b/.test(first)) return 'powershell';
  return 'unknown';
}

/** All logical commands of a file (no classification). */
export function logicalCommands(file: string, text: string, kind: FileKind = fileKind(file, text)): LogicalCommand[] {
  switch (kind) {
    case 'shell':
      return shellCommands(numbered(lines(text)));
    case 'markdown':
      return markdownCommands(lines(text));
    case 'powershell':
      return psCommands(numbered(lines(text)));
    case 'dockerfile':
      return dockerCommands(lines(text));
    case 'makefile':
      return makeCommands(lines(text));
    case 'justfile':
      return justCommands(lines(text));
    case 'compose':
      return composeCommands(text);
    case 'workflow':
      return workflowCommands(text);
    case 'notebook':
      return notebookCommands(text);
    case 'notebook-cell':
      return notebookCellCommands(text);
    case 'package-json':
      return packageJsonCommands(text);
    case 'devcontainer':
      return devcontainerCommands(text);
    case 'vscode-tasks':
      return tasksJsonCommands(text);
    default:
      return [];
  }
}

/**
 * Drop shell syntax that is not part of a runnable command at the start or end of a line:
 * `then`/`else`/`do`/`{` keywords, a case pattern `deps)`, a trailing `;;`.
 */
function tidy(text: string): string {
  let t = text;
  for (;;) {
    const next = t.replace(/^(then|else|do|\{)\s+/, '').replace(/^(?!\()[^\s()"'`$=]+\)\s+/, '');
    if (next === t) break;
    t = next;
  }
  return t.replace(/\s*;;\s*$/, '');
}

/** The `risk` reason of a command's parts: the highest-class part first, e.g. `npx -y x (remote-code: runs code fetched from the network)`. */
function reasonOf(parts: RiskyPart[], top: RiskClass): string {
  const first = parts.find((p) => p.class === top)!;
  const rest = parts.filter((p) => p !== first);
  const one = (p: RiskyPart): string => `${tidy(p.text)} (${p.class}: ${CLASS_REASON[p.class]})`;
  return [one(first), ...rest.map(one)].join('; also ');
}

/** The classification of one logical command text (what does not depend on where it is). */
interface Verdict {
  parts: RiskyPart[];
  top: RiskClass | null;
  /** Files the command downloads (noteDownloads), to replay into the context on a cache hit. */
  downloads: string[];
  text: string;
  risk: string;
  reason: string;
}

/**
 * Memo of verdicts by command text, for contexts that do not change them (no downloaded files seen
 * yet, no package.json bins, no Makefile variables). Typing in a 5,000-line file rescans it on every
 * version, and almost every line is the same text as before. Bounded; cleared when full.
 */
const MEMO = new Map<string, Verdict>();
const MEMO_MAX = 50_000;
let memoOn = true;

/** Turn the verdict memo on or off (benchmarks measure the scanner without it); clears it either way. */
export function setRiskMemo(on: boolean): void {
  memoOn = on;
  MEMO.clear();
}

function verdictOf(lc: LogicalCommand, ctx: ClassifyContext): Verdict {
  const memoable = memoOn && !ctx.downloaded?.size && !ctx.localBins && !lc.vars;
  const key = lc.powershell ? `ps\u0000${lc.text}` : lc.text;
  if (memoable) {
    const hit = MEMO.get(key);
    if (hit) {
      for (const d of hit.downloads) ctx.downloaded?.add(d);
      return hit;
    }
  }
  const before = ctx.downloaded ? new Set(ctx.downloaded) : undefined;
  const parts: RiskyPart[] = [];
  let top: RiskHit | null = null;
  // fast path: a command that names no known tool and redirects nowhere cannot be risky (unless it may run a downloaded file)
  const probe = lc.vars ? expand(lc.text, lc.vars) : lc.text;
  if (ctx.downloaded?.size || MAYBE_RISKY.test(probe) || MAYBE_CONFIG_WRITE.test(probe)) {
    // PowerShell: `\` separates paths; double it so the POSIX word splitter keeps it
    const src = lc.powershell ? lc.text.replace(/\\/g, '\\\\') : lc.text;
    // `cd DIR` of the chain resolves later relative paths; it does not outlive the logical command
    let local: ClassifyContext = ctx;
    for (const p of splitCommands(src)) {
      let h: RiskHit | null = null;
      if (lc.vars && /\$[({]/.test(p.text))
        for (const e of splitCommands(expand(p.text, lc.vars))) h = maxHit(h, classifyPipeline(e, 0, local));
      else h = classifyPipeline(p, 0, local);
      for (const c of p.commands) noteDownloads(c.words, ctx);
      const w = p.commands.length === 1 ? unwrap(p.commands[0].words) : [];
      if (w[0] === 'cd' && w[1] && !w[1].startsWith('-')) local = { ...local, cwd: cdTarget(w[1], local.cwd) };
      if (!h) continue;
      parts.push({ text: lc.powershell ? p.text.replace(/\\\\/g, '\\') : p.text, class: h.class, reason: h.reason });
      top = maxHit(top, h);
    }
  }
  const downloads = ctx.downloaded && before ? [...ctx.downloaded].filter((d) => !before.has(d)) : [];
  const v: Verdict = {
    parts,
    top: top?.class ?? null,
    downloads,
    text: top ? tidy(lc.text) : lc.text,
    risk: top ? reasonOf(parts, top.class) : '',
    reason: top?.reason ?? '',
  };
  if (memoable) {
    if (MEMO.size >= MEMO_MAX) MEMO.clear();
    MEMO.set(key, v);
  }
  return v;
}

/** The directory `cd DIR` moves to, for resolving relative paths of the same chain (no I/O; `cd -` and `cd` alone are unknown). */
function cdTarget(dir: string, cwd: string | undefined): string | undefined {
  if (/^[/~$]/.test(dir)) return dir;
  return cwd ? `${cwd.replace(/\/+$/, '')}/${dir}` : undefined;
}

/** Classify logical commands: the risky ones with their parts, class and reason. */
function classify(cmds: LogicalCommand[], kind: FileKind, ctx: ClassifyContext): RiskyCommand[] {
  const out: RiskyCommand[] = [];
  for (const lc of cmds) {
    const v = verdictOf(lc, ctx);
    if (v.top)
      out.push({
        line: lc.line,
        endLine: lc.endLine,
        text: v.text,
        class: v.top,
        parts: v.parts,
        risk: v.risk,
        reason: v.reason,
        kind,
      });
  }
  return out;
}

/**
 * Risky logical commands of a file, in file order, each with its class (highest of its parts), its
 * risky parts and a reason. This is what a CodeLens runs: the whole logical command.
 * @param file file name or path; picks the file kind (with the text) unless `kind` is given
 * @param kind override the file kind, e.g. `notebook-cell` for the text of one notebook cell
 */
export function scanCommands(file: string, text: string, kind: FileKind = fileKind(file, text)): RiskyCommand[] {
  const ctx: ClassifyContext = {
    downloaded: new Set(),
    ...(kind === 'package-json' ? { localBins: packageJsonBins(text) } : {}),
  };
  return classify(logicalCommands(file, text, kind), kind, ctx).sort((a, b) => a.line - b.line);
}

/**
 * Find risky commands in a text.
 * @param file file name or path; picks the file kind (with the text). Returned unchanged in each finding.
 * @param text the file's content
 * @param kind override the file kind (see FileKind)
 * @returns one finding per risky logical command, in file order: `{file, line, endLine, command, class,
 *   kind, risk}`; lines 1-based (for notebooks: lines of the .ipynb file); `command` is the whole logical
 *   command (continuations joined); `risk` names the risky part(s). [] for unknown file kinds.
 */
export function scanText(file: string, text: string, kind?: FileKind): RiskFinding[] {
  return scanCommands(file, text, kind).map((c) => ({
    file,
    line: c.line,
    endLine: c.endLine,
    command: c.text,
    class: c.class,
    kind: c.kind,
    risk: c.risk,
    reason: c.reason,
  }));
}

/** The verdict on one terminal command: its class, a one-line reason and the risky parts. */
export interface CommandVerdict {
  class: RiskClass;
  /** e.g. `destructive: git reset --hard discards uncommitted changes (on build-01)` */
  reason: string;
  parts: RiskyPart[];
}

/**
 * Classify a terminal command as an agent's terminal tool receives it (`hermes` terminal `command`, a Bash tool
 * call): one command line, or a short script (several lines, continuations, heredocs). What the hook calls;
 * pure and fast (well under 1 ms for a command; see bench/risk.bench.ts).
 * @returns the highest class of its risky parts with that part's reason, or null when nothing in it is risky
 */
export function classifyCommand(text: string): CommandVerdict | null {
  const cmds = scanCommands('command.sh', text, 'shell');
  if (!cmds.length) return null;
  const top = cmds.reduce((a, c) => (RISK_CLASSES.indexOf(c.class) > RISK_CLASSES.indexOf(a.class) ? c : a));
  return { class: top.class, reason: top.reason, parts: cmds.flatMap((c) => c.parts) };
}

/**
 * Risky commands of the text of one notebook cell (a `vscode-notebook-cell:` document): `!…`, `%pip`,
 * `%conda`, … lines and `%%bash` cell bodies. Lines are 1-based within the cell.
 */
export function scanNotebookCell(text: string): RiskyCommand[] {
  return scanCommands('cell', text, 'notebook-cell');
}
