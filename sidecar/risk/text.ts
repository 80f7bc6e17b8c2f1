/**
 * Logical commands of line-oriented file kinds: shell scripts, Markdown fences, PowerShell,
 * Dockerfile RUN, Makefile recipes, justfile recipes, and notebook cell lines. Pure functions, no I/O.
 *
 * A logical command is one or more physical lines joined by trailing-backslash continuations (backtick
 * in PowerShell); `line`/`endLine` are its first and last physical lines (1-based). Its `text` is
 * normalised like the corpus labels: prompt/`RUN`/recipe prefixes removed, continuation lines joined,
 * whitespace collapsed, a trailing `# comment` dropped. Variables are not expanded in `text`.
 */
import { splitCommands, stripComment } from './shell';
import { unwrap, cmdName } from './classify';

/** A logical command found in a file, before classification. */
export interface LogicalCommand {
  /** 1-based first physical line */
  line: number;
  /** 1-based last physical line */
  endLine: number;
  /** The command text: prefixes removed, continuations joined, whitespace collapsed, comment dropped. */
  text: string;
  /** Variables to expand before classifying (Makefile `NAME = value`), e.g. PIP → .venv/bin/pip. */
  vars?: Record<string, string>;
  /** PowerShell text: `\` is a path separator, not an escape, when it is split into words. */
  powershell?: boolean;
}

/** A physical line with its 1-based number. */
export interface NumberedLine {
  n: number;
  s: string;
}

/** Split text into lines (LF or CRLF). */
export function lines(text: string): string[] {
  return text.split(/\r?\n/);
}

/** Collapse runs of whitespace to one space and trim (fast when there are none). */
function collapse(s: string): string {
  return /\s\s|[\t\r\n\f\v]/.test(s) ? s.replace(/\s+/g, ' ').trim() : s.trim();
}

/** Number lines 1-based. */
export function numbered(all: string[], first = 1): NumberedLine[] {
  return all.map((s, k) => ({ n: k + first, s }));
}

const HEREDOC = /<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/;
/** How far a quoted string may run over lines before the line is taken on its own (a stray `'` in prose). */
const MAX_QUOTED_LINES = 40;

/** Whether shell text ends inside an unterminated '…' or "…" (a `#` comment outside quotes ends the check). */
export function unterminatedQuote(s: string): boolean {
  let q: string | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === '\\' && q === '"') i++;
      else if (c === q) q = null;
      continue;
    }
    if (c === '\\') i++;
    else if (c === "'" || c === '"') q = c;
    else if (c === '#' && (i === 0 || /\s/.test(s[i - 1]))) return false;
  }
  return q !== null;
}
const SHELL_NAMES = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash']);

/**
 * Whether a heredoc's body is fed to a shell as a script (`bash <<EOF`, `sudo sh -s <<'EOF'`,
 * `ssh host bash <<EOF`), so its lines are commands; otherwise (`cat > file <<EOF`, `python - <<EOF`)
 * the body is data and is skipped.
 */
function heredocIsScript(text: string): boolean {
  const before = text.slice(0, text.search(/<</));
  const p = splitCommands(before).at(-1);
  const last = p?.commands.at(-1);
  if (!last) return false;
  let w = unwrap(last.words);
  if (w.length && cmdName(w[0]) === 'ssh') {
    // ssh [opts] host CMD...
    let i = 1;
    while (i < w.length && w[i].startsWith('-')) i += /^-[bcDEeFIiJLlmOopQRSWw]$/.test(w[i]) ? 2 : 1;
    w = unwrap(w.slice(i + 1));
  }
  return (
    w.length > 0 &&
    SHELL_NAMES.has(cmdName(w[0])) &&
    !w.slice(1).some((a) => /^-[a-z]*c[a-z]*$/.test(a) || (!a.startsWith('-') && a !== '-'))
  );
}

/**
 * Logical commands of shell text given as numbered physical lines: continuations joined, comment
 * lines and data heredoc bodies skipped (a heredoc fed to a shell is scanned line by line).
 * @param prefix strips a per-line prefix; returns null when the line is not a command (console output)
 */
export function shellCommands(
  src: NumberedLine[],
  prefix?: (s: string, continuing: boolean) => string | null,
): LogicalCommand[] {
  const out: LogicalCommand[] = [];
  let i = 0;
  while (i < src.length) {
    const startN = src[i].n;
    let raw = prefix ? prefix(src[i].s, false) : src[i].s;
    if (raw === null) {
      i++;
      continue;
    }
    const parts: string[] = [];
    let endN = startN;
    for (;;) {
      const t = raw.trimEnd();
      const cont = t.endsWith('\\') && /(^|[^\\])(\\\\)*\\$/.test(t);
      if (!t.trim().startsWith('#') || parts.length === 0) parts.push(cont ? t.slice(0, -1) : t);
      i++;
      if (!cont || i >= src.length) break;
      const next = prefix ? prefix(src[i].s, true) : src[i].s;
      if (next === null) break;
      endN = src[i].n;
      raw = next;
    }
    let joined = parts.length === 1 ? parts[0].trim() : parts.map((p) => p.trim()).join(' ');
    // a quoted string that goes on over the next lines (`echo "Run:` … `npm i -g x"`) is one command
    if ((joined.includes('"') || joined.includes("'")) && !joined.startsWith('#') && unterminatedQuote(joined)) {
      let acc = joined;
      for (let k = i; k < src.length && k < i + MAX_QUOTED_LINES; k++) {
        const next = prefix ? prefix(src[k].s, true) : src[k].s;
        if (next === null) break;
        acc += '\n' + next;
        if (!unterminatedQuote(acc)) {
          joined = acc;
          endN = src[k].n;
          i = k + 1;
          break;
        }
      }
    }
    const text = collapse(stripComment(joined));
    const hd = text.includes('<<') ? HEREDOC.exec(text) : null;
    if (hd && !/^\s*#/.test(text)) {
      const term = hd[3];
      const dash = hd[1] === '-';
      const body: NumberedLine[] = [];
      while (i < src.length) {
        const l = prefix ? (prefix(src[i].s, true) ?? '') : src[i].s;
        i++;
        if ((dash ? l.replace(/^\t+/, '') : l).trim() === term) break;
        body.push({ n: src[i - 1].n, s: l });
      }
      if (text && !text.startsWith('#')) out.push({ line: startN, endLine: endN, text });
      if (heredocIsScript(text)) out.push(...shellCommands(body));
      continue;
    }
    if (text && !text.startsWith('#')) out.push({ line: startN, endLine: endN, text });
  }
  return out;
}

const SHELL_FENCES = new Set(['sh', 'bash', 'shell', 'zsh', 'ksh', 'fish', 'dash', '']);
const CONSOLE_FENCES = new Set([
  'console',
  'shellsession',
  'shell-session',
  'terminal',
  'sh-session',
  'bash-session',
  'shell_session',
]);
const PS_FENCES = new Set(['powershell', 'pwsh', 'ps1', 'ps', 'posh']);

/** Language of a fence info string: ```` ```bash title="x" ````, ```` ```{.bash} ````, ```` ```sh {3} ```` → bash, bash, sh. */
function fenceLang(info: string): string {
  const m = /^\{?\s*\.?([^\s`{},]*)/.exec(info.trim());
  return (m?.[1] ?? '').toLowerCase();
}

/** A console/terminal fence line: the command after a `$ ` prompt (optionally `user@host:~$ `), else null. */
function consolePrompt(s: string, continuing: boolean): string | null {
  if (continuing) return s.replace(/^\s*>\s?/, '');
  const p = /^\s*(?:[\w.@~:/-]*\$|\$)\s(.*)$/.exec(s);
  return p ? p[1] : null;
}

/** Logical commands of a Markdown text: inside shell-language, console, PowerShell or untagged fences only. */
export function markdownCommands(all: string[]): LogicalCommand[] {
  const out: LogicalCommand[] = [];
  let i = 0;
  while (i < all.length) {
    const m = /^(\s*(?:>\s*)?)(`{3,}|~{3,})(.*)$/.exec(all[i]);
    if (!m || (m[2][0] === '`' && m[3].includes('`'))) {
      i++;
      continue;
    }
    const indent = m[1].length;
    const quoted = m[1].includes('>'); // a fence inside a > blockquote
    const fence = m[2];
    const lang = fenceLang(m[3]);
    const body: NumberedLine[] = [];
    const close = new RegExp(`^\\s*(?:>\\s*)?${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    i++;
    while (i < all.length) {
      if (close.test(all[i])) {
        i++;
        break;
      }
      const l = quoted ? all[i].replace(/^\s*>\s?/, '') : all[i];
      body.push({ n: i + 1, s: quoted ? l : l.slice(Math.min(indent, l.length - l.trimStart().length)) });
      i++;
    }
    if (CONSOLE_FENCES.has(lang)) out.push(...shellCommands(body, consolePrompt));
    else if (SHELL_FENCES.has(lang))
      out.push(...shellCommands(body, (s, continuing) => (continuing ? s : s.replace(/^\s*\$ /, ''))));
    else if (PS_FENCES.has(lang)) out.push(...psCommands(body));
  }
  return out;
}

/** PowerShell lines: optional `PS> ` / `PS C:\x> ` prompt, backtick continuation, `#` comments. */
export function psCommands(body: NumberedLine[]): LogicalCommand[] {
  const out: LogicalCommand[] = [];
  let inBlockComment = false;
  for (let i = 0; i < body.length; i++) {
    const start = body[i].n;
    let s = body[i].s.replace(/^\s*PS(?: [^>]*)?>\s?/, '');
    if (inBlockComment) {
      if (s.includes('#>')) inBlockComment = false;
      continue;
    }
    if (/^\s*<#/.test(s)) {
      if (!s.includes('#>')) inBlockComment = true;
      continue;
    }
    let end = start;
    while (/`\s*$/.test(s) && i + 1 < body.length) {
      i++;
      end = body[i].n;
      s = s.replace(/`\s*$/, ' ') + body[i].s.trim();
    }
    const text = stripComment(s).replace(/\s+/g, ' ').trim();
    if (text && !text.startsWith('#')) out.push({ line: start, endLine: end, text, powershell: true });
  }
  return out;
}

/** JSON exec-form argv → a shell-like command line (`["sh","-c","a && b"]` → `sh -c "a && b"`). */
export function argvText(argv: unknown[]): string {
  return argv.map((a) => shellQuote(String(a))).join(' ');
}

/** Quote one argv word for display/classification when it has spaces or quotes. */
export function shellQuote(a: string): string {
  if (a !== '' && !/[\s"'\\;&|<>()$`]/.test(a)) return a;
  if (!/["\\$`]/.test(a)) return `"${a}"`;
  if (!a.includes("'")) return `'${a}'`;
  return `"${a.replace(/(["\\$`])/g, '\\$1')}"`;
}

/**
 * Logical commands of a Dockerfile / Containerfile: `RUN` instructions (shell or exec form, `--mount=`
 * and other flags dropped, continuations joined, comment lines inside skipped) and the lines of `RUN
 * <<EOT` heredoc scripts (each its own command; the `RUN <<EOT` line itself is not one).
 */
export function dockerCommands(all: string[]): LogicalCommand[] {
  const out: LogicalCommand[] = [];
  let i = 0;
  let escape = '\\';
  const dir = /^#\s*escape\s*=\s*(\S)/i.exec(all[0] ?? '');
  if (dir) escape = dir[1];
  while (i < all.length) {
    if (!/^\s*(ONBUILD\s+)?RUN\b/i.test(all[i])) {
      i++;
      continue;
    }
    const start = i + 1;
    const parts: string[] = [];
    let end = start;
    for (;;) {
      const t = all[i].replace(/\s+$/, '');
      i++;
      if (/^\s*#/.test(t) && parts.length) {
        if (i >= all.length) break;
        continue;
      }
      if (!t.trim() && parts.length) {
        // an empty line inside a continuation is ignored by BuildKit
        if (i >= all.length) break;
        continue;
      }
      const cont = t.endsWith(escape);
      parts.push(cont ? t.slice(0, -1) : t);
      end = i;
      if (!cont || i >= all.length) break;
    }
    let text = parts
      .map((p) => p.trim())
      .join(' ')
      .replace(/^(ONBUILD\s+)?RUN\s+/i, '');
    while (/^--[a-z-]+(=("[^"]*"|\S)+)?\s/.test(text)) text = text.replace(/^--[a-z-]+(=("[^"]*"|\S)+)?\s+/, '');
    const hd = /^<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?(.*)$/.exec(text);
    if (hd) {
      const body: NumberedLine[] = [];
      while (i < all.length && all[i].trim() !== hd[1]) {
        body.push({ n: i + 1, s: all[i] });
        i++;
      }
      i++;
      // `RUN <<EOT` (default shell), `RUN <<EOT bash`, `RUN <<EOT sh -e`: a script; `RUN python3 <<EOT`-style bodies are data
      const interp = hd[2].trim().split(/\s+/)[0] ?? '';
      if (!interp || SHELL_NAMES.has(cmdName(interp)) || interp.startsWith('#')) out.push(...shellCommands(body));
      continue;
    }
    if (text.startsWith('[')) {
      try {
        const argv = JSON.parse(text) as unknown;
        if (Array.isArray(argv)) text = argvText(argv);
      } catch {
        /* not JSON: the shell form */
      }
    }
    text = stripComment(text).replace(/\s+/g, ' ').trim();
    // a shell heredoc in a RUN line (`RUN cat > f <<EOF` / `RUN bash <<EOF`): the body follows
    const sh = HEREDOC.exec(text);
    if (sh) {
      const body: NumberedLine[] = [];
      while (i < all.length && all[i].trim() !== sh[3]) {
        body.push({ n: i + 1, s: all[i] });
        i++;
      }
      i++;
      if (text) out.push({ line: start, endLine: end, text });
      if (heredocIsScript(text)) out.push(...shellCommands(body));
      continue;
    }
    if (text) out.push({ line: start, endLine: end, text });
  }
  return out;
}

/** Makefile variable assignments (`NAME = v`, `:=`, `::=`, `?=`, `+=`), later ones winning. */
function makeVars(all: string[]): Record<string, string> {
  // no prototype: a variable named `constructor` or `__proto__` is a variable like any other
  const vars: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const l of all) {
    const m = /^(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*(::?=|:::=|\?=|\+=|=)\s*(.*)$/.exec(l);
    if (!m) continue;
    const v = stripComment(m[3]).trim();
    if (m[2] === '+=') vars[m[1]] = vars[m[1]] ? `${vars[m[1]]} ${v}` : v;
    else if (m[2] === '?=') vars[m[1]] ??= v;
    else vars[m[1]] = v;
  }
  return vars;
}

/**
 * Logical commands of a Makefile: tab-indented recipe lines (after a rule), `@`/`-`/`+` prefixes
 * removed, `$$` → `$`. Variables are attached for classification (`$(PIP) install` → pip install).
 */
export function makeCommands(all: string[]): LogicalCommand[] {
  const out: LogicalCommand[] = [];
  let run: NumberedLine[] = [];
  const flush = (): void => {
    out.push(
      ...shellCommands(run, (s, continuing) =>
        (continuing ? s.replace(/^\t/, '') : s.replace(/^\t+/, '').replace(/^[@+-]+\s*/, '')).replace(/\$\$/g, '$'),
      ),
    );
    run = [];
  };
  let inDefine = false;
  all.forEach((s, k) => {
    if (/^define\b/.test(s)) inDefine = true;
    if (inDefine) {
      if (/^endef\b/.test(s)) inDefine = false;
      return;
    }
    const prevCont = run.length > 0 && /\\\s*$/.test(run[run.length - 1].s) && run[run.length - 1].n === k;
    if (s.startsWith('\t') || prevCont) {
      if (run.length && run[run.length - 1].n !== k) flush();
      run.push({ n: k + 1, s });
    }
  });
  if (run.length) flush();
  const vars = makeVars(all);
  return out.map((c) => ({ ...c, vars }));
}

/** Expand `$(NAME)` / `${NAME}` from `vars`, a few levels deep (unknown names stay). */
export function expand(text: string, vars?: Record<string, string>): string {
  if (!vars) return text;
  let t = text;
  for (let k = 0; k < 5; k++) {
    const next = t.replace(/\$[({]([A-Za-z_][A-Za-z0-9_.-]*)[)}]/g, (all, n: string) =>
      Object.hasOwn(vars, n) ? vars[n] : all,
    );
    if (next === t) break;
    t = next;
  }
  return t;
}

/**
 * Logical commands of a justfile: indented recipe body lines (also of `#!` shebang recipes), `@`/`-`
 * prefixes removed. `{{var}}` interpolations stay as written.
 */
export function justCommands(all: string[]): LogicalCommand[] {
  const out: LogicalCommand[] = [];
  let body: NumberedLine[] = [];
  let inRecipe = false;
  const flush = (): void => {
    out.push(...shellCommands(body, (s, continuing) => (continuing ? s : s.trimStart().replace(/^[@-]+/, ''))));
    body = [];
  };
  all.forEach((line, k) => {
    if (/^[ \t]+\S/.test(line)) {
      if (inRecipe) body.push({ n: k + 1, s: line });
      return;
    }
    if (!line.trim()) return;
    flush();
    // a recipe header: `name args:` / `[attr]` lines keep the state; not `x := y`, `set …`, a comment
    if (/^\[.*\]\s*$/.test(line)) return;
    inRecipe = /^@?[A-Za-z_][\w-]*(\s+[^:=]*)?:(?!=)/.test(line) && !/^(set|alias|export|import|mod)\b/.test(line);
  });
  flush();
  return out;
}

/**
 * The shell command of one notebook code-cell line: `!cmd` / `!!cmd` / `x = !cmd`, `%pip …`, `%conda …`,
 * `%mamba …`, `%micromamba …`, `%uv …`, `%sx cmd`, `%system cmd`; null for Python code and comments.
 */
export function notebookEscape(s: string): string | null {
  const t = s.trim();
  if (!t || t.startsWith('#')) return null;
  let m = /^!!?\s*(.+)$/.exec(t) ?? /^[\w.,\s[\]]+=\s*!!?\s*(.+)$/.exec(t);
  if (m) return m[1];
  m = /^%(pip|conda|mamba|micromamba|uv)\s+(.+)$/.exec(t);
  if (m) return `${m[1]} ${m[2]}`;
  m = /^(?:[\w.,\s]+=\s*)?%(?:sx|system|sh)\s+(.+)$/.exec(t);
  if (m) return m[1];
  return null;
}

const CELL_SHELL = /^%%(bash|sh|zsh|shell|script\s+(?:ba|z|da)?sh)\b/;
const CELL_PS = /^%%(powershell|pwsh)\b/;
const CELL_PYTHON = /^%%(capture|time|timeit|prun|debug|python3?|markdown_hidden|cache)\b/;

/**
 * Logical commands of one notebook code cell given as numbered lines (the numbers may repeat when
 * several cell lines live on one line of the .ipynb file). `%%bash`/`%%sh`/`%%script bash` cells: every
 * body line is a shell command; `%%capture`/`%%time` cells: Python as below; other cell magics
 * (`%%writefile`, `%%html`, …): nothing. Python cells: only `!…` and `%pip`/`%conda`-style escapes.
 */
export function cellCommands(cell: NumberedLine[]): LogicalCommand[] {
  let k = 0;
  for (;;) {
    while (k < cell.length && !cell[k].s.trim()) k++;
    const first = (cell[k]?.s ?? '').trim();
    if (!first.startsWith('%%')) break;
    if (CELL_SHELL.test(first)) return shellCommands(cell.slice(k + 1));
    if (CELL_PS.test(first)) return psCommands(cell.slice(k + 1));
    if (!CELL_PYTHON.test(first)) return [];
    k++;
  }
  return shellCommands(cell.slice(k), (s, continuing) => (continuing ? s : notebookEscape(s)));
}
