/**
 * A small shell lexer for the risk scan: splits a logical command line into simple commands (on
 * `&&`, `||`, `;`, `&`, newlines), pipelines (on `|`), and words (quotes and escapes removed).
 * It is not a full POSIX parser: it only has to find where commands start. Pure functions, no I/O.
 */

/** One simple command of a pipeline: its source text and its words (quotes removed). */
export interface SimpleCommand {
  text: string;
  words: string[];
}

/** A pipeline: simple commands joined by `|`, with the source text of the whole pipeline. */
export interface Pipeline {
  text: string;
  commands: SimpleCommand[];
}

/**
 * Remove a trailing `# comment` (a `#` at the start of a word, outside quotes and `$(...)`).
 * @returns the text before the comment, right-trimmed
 */
export function stripComment(s: string): string {
  if (!s.includes('#')) return s.trimEnd();
  let q: string | null = null;
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === '\\' && q === '"') i++;
      else if (c === q) q = null;
      continue;
    }
    if (c === '\\') {
      i++;
    } else if (c === "'" || c === '"' || c === '`') {
      q = c;
    } else if (c === '$' && s[i + 1] === '(') {
      depth++;
      i++;
    } else if (c === ')' && depth > 0) {
      depth--;
    } else if (c === '#' && depth === 0 && (i === 0 || /\s|;|&|\|/.test(s[i - 1]))) {
      return s.slice(0, i).trimEnd();
    }
  }
  return s.trimEnd();
}

/**
 * Split a logical line into pipelines (on `&&`, `||`, `;`, `;;`, `&`, newline outside quotes and
 * `$(...)`/`<(...)`/backticks), each split into simple commands on `|`.
 */
export function splitCommands(s: string): Pipeline[] {
  const pipelines: Pipeline[] = [];
  let cmds: string[] = [];
  let segStart = 0;
  let q: string | null = null;
  let depth = 0;
  const endCmd = (end: number, next: number): void => {
    cmds.push(s.slice(segStart, end));
    segStart = next;
  };
  const endPipeline = (end: number, next: number): void => {
    endCmd(end, next);
    const parts = cmds.map((t) => t.trim()).filter((t) => t.length > 0);
    if (parts.length)
      pipelines.push({ text: parts.join(' | '), commands: parts.map((t) => ({ text: t, words: words(t) })) });
    cmds = [];
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === '\\' && q === '"') i++;
      else if (c === q) q = null;
      continue;
    }
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      q = c;
      continue;
    }
    if ((c === '$' || c === '<' || c === '>') && s[i + 1] === '(') {
      depth++;
      i++;
      continue;
    }
    if (depth > 0) {
      if (c === '(') depth++;
      else if (c === ')') depth--;
      continue;
    }
    const n = s[i + 1];
    if ((c === '&' && n === '&') || (c === '|' && n === '|') || (c === ';' && n === ';')) {
      endPipeline(i, i + 2);
      i++;
    } else if (c === ';' || c === '\n') {
      endPipeline(i, i + 1);
    } else if (c === '&' && s[i - 1] !== '>' && n !== '>') {
      endPipeline(i, i + 1);
    } else if (c === '|' && s[i - 1] !== '>') {
      if (n === '&') {
        endCmd(i, i + 2); // |&
        i++;
      } else endCmd(i, i + 1);
    }
  }
  endPipeline(s.length, s.length);
  return pipelines;
}

/** Split a simple command into words: quotes removed, escapes resolved, redirections dropped. */
export function words(s: string): string[] {
  // fast path: no quotes, escapes or substitutions
  const out: string[] = /["'\\`(]/.test(s) ? [] : s.split(/\s+/).filter((w) => w.length > 0);
  if (out.length || !s.trim()) return dropRedirections(out);
  let cur = '';
  let has = false;
  let q: string | null = null;
  let depth = 0;
  // words that start with a quote are never redirections (`"<your_email>"`, `'>'`)
  let quoted: Set<number> | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === q) q = null;
      else if (c === '\\' && q === '"' && /["\\$`]/.test(s[i + 1] ?? '')) cur += s[++i];
      else cur += c;
      continue;
    }
    if (depth > 0) {
      if (c === '(') depth++;
      if (c === ')') depth--;
      cur += c;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (has) out.push(cur);
      cur = '';
      has = false;
      continue;
    }
    if (!has && (c === "'" || c === '"')) (quoted ??= new Set()).add(out.length);
    has = true;
    if (c === '\\' && i + 1 < s.length) cur += s[++i];
    else if (c === "'" || c === '"') q = c;
    else if ((c === '$' || c === '<' || c === '>') && s[i + 1] === '(') {
      depth++;
      cur += c + '(';
      i++;
    } else cur += c;
  }
  if (has) out.push(cur);
  return dropRedirections(out, quoted);
}

/** Drop redirections: `>file`, `2>&1`, `> file`, `<file`, `&>/dev/null` (not words that were quoted). */
function dropRedirections(out: string[], quoted?: Set<number>): string[] {
  const res: string[] = [];
  for (let i = 0; i < out.length; i++) {
    const w = out[i];
    if ((!w.includes('>') && !w.includes('<')) || quoted?.has(i)) {
      res.push(w);
      continue;
    }
    if (/^(\d*|&)(>>?|<)$/.test(w)) {
      i++; // operator alone: skip its target too
      continue;
    }
    if (/^(\d*|&)(>>?|<)(?!\()/.test(w)) continue;
    res.push(w);
  }
  return res;
}

/**
 * The output redirections of one simple command (`> f`, `>> f`, `1> f`, `&> f`, `>| f`): operator and target,
 * quotes removed; not `2> f` (stderr), not fd duplications (`2>&1`, `>&2`), nothing inside quotes or `$(…)`.
 * `cat > ~/.hermes/config.yaml <<'EOF'` → `[{op: '>', target: '~/.hermes/config.yaml'}]`.
 */
export function redirectTargets(s: string): Array<{ op: '>' | '>>'; target: string }> {
  if (!s.includes('>')) return [];
  const out: Array<{ op: '>' | '>>'; target: string }> = [];
  let q: string | null = null;
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === '\\' && q === '"') i++;
      else if (c === q) q = null;
      continue;
    }
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      q = c;
      continue;
    }
    if ((c === '$' || c === '<') && s[i + 1] === '(') {
      depth++;
      i++;
      continue;
    }
    if (depth > 0) {
      if (c === '(') depth++;
      else if (c === ')') depth--;
      continue;
    }
    if (c !== '>' || s[i + 1] === '(') continue;
    const before = s[i - 1];
    if (before === '>' || before === '<') continue; // second char of `>>`, or `<>`
    if (before !== undefined && /\d/.test(before) && before !== '1' && (i < 2 || !/\w/.test(s[i - 2]))) continue; // 2> f
    let j = i + 1;
    const op = s[j] === '>' ? '>>' : '>';
    if (s[j] === '>' || s[j] === '|') j++;
    if (s[j] === '&') continue; // >&2
    while (s[j] === ' ' || s[j] === '\t') j++;
    let t = '';
    let tq: string | null = null;
    for (; j < s.length; j++) {
      const d = s[j];
      if (tq) {
        if (d === tq) tq = null;
        else t += d;
        continue;
      }
      if (d === "'" || d === '"') tq = d;
      else if (/[\s;&|<>()]/.test(d)) break;
      else t += d;
    }
    if (t) out.push({ op, target: t });
    i = j - 1;
  }
  return out;
}
