/**
 * Logical commands of structured file kinds, with the physical lines they sit on: docker-compose
 * `command:`/`entrypoint:`, GitHub workflow (and composite action) `run:`, package.json `scripts`,
 * devcontainer.json `*Command`, .vscode/tasks.json tasks, and Jupyter notebooks (.ipynb). YAML is read
 * with `yaml`, JSON/JSONC with ./jsonc; both keep source offsets, which become 1-based lines.
 * Pure functions, no I/O. A file that does not parse yields what could be read (never throws).
 */
import { parseJsonc, type JsonNode } from './jsonc';
import { LineCounter, parseDocument, isScalar, isSeq, visit, Scalar, type Node as YamlNode, type Pair } from 'yaml';
import { argvText, cellCommands, numbered, shellCommands, type LogicalCommand, type NumberedLine } from './text';
import { stripComment } from './shell';

/** Offsets → 1-based line numbers (binary search over line starts). */
export class Lines {
  private readonly starts: number[] = [0];
  constructor(text: string) {
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) this.starts.push(i + 1);
  }
  /** 1-based line of a 0-based offset. */
  at(offset: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }
}

const oneLine = (s: string): string => stripComment(s.replace(/\s+/g, ' ').trim());

// ---------------------------------------------------------------- YAML

/** A YAML scalar as commands: block literal → one per line (a script); anything else → one command. */
function yamlScalarCommands(node: Scalar, lc: LineCounter, script: boolean, source: string): LogicalCommand[] {
  const range = node.range;
  if (!range) return [];
  const value = String(node.value ?? '');
  const startLine = lc.linePos(range[0]).line;
  if (node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED) {
    const body = value.split('\n');
    const src: NumberedLine[] = body.map((s, k) => ({ n: startLine + 1 + k, s }));
    if (node.type === Scalar.BLOCK_LITERAL && script) return shellCommands(src);
    // folded: one command spanning the non-empty physical lines after the `>` header
    const phys = source.slice(range[0], range[1]).split('\n');
    const used = phys.map((s, k) => ({ n: startLine + k, s })).filter((l, k) => k > 0 && l.s.trim());
    const text = oneLine(value);
    return text && used.length ? [{ line: used[0].n, endLine: used[used.length - 1].n, text }] : [];
  }
  const endPos = lc.linePos(Math.max(range[0], range[1] - 1)).line;
  const text = oneLine(value);
  return text && !text.startsWith('#') ? [{ line: startLine, endLine: endPos, text }] : [];
}

/**
 * A compose `command:`/`entrypoint:` value: a string (plain, quoted, folded) is one command; a list is
 * an argv, one command from its first to its last item, unless it is `[sh, -c, |script]` with a block
 * literal script, whose lines are each a command.
 */
function composeValueCommands(node: YamlNode | null, lc: LineCounter, source: string): LogicalCommand[] {
  if (!node) return [];
  if (isScalar(node)) return yamlScalarCommands(node, lc, false, source);
  if (!isSeq(node) || !node.range) return [];
  const items = node.items.filter(isScalar);
  const last = items.at(-1);
  if (
    last &&
    last.type === Scalar.BLOCK_LITERAL &&
    items.length >= 2 &&
    /^-[a-z]*c[a-z]*$/.test(String(items[items.length - 2].value))
  ) {
    return yamlScalarCommands(last, lc, true, source);
  }
  const text = argvText(items.map((i) => i.value));
  if (!text.trim()) return [];
  const first = items[0]?.range?.[0] ?? node.range[0];
  const end = last?.range ? Math.max(last.range[0], last.range[1] - 1) : node.range[0];
  return [{ line: lc.linePos(node.flow ? node.range[0] : first).line, endLine: lc.linePos(end).line, text }];
}

/** Logical commands of a docker-compose file: every `command:` and `entrypoint:` value. */
export function composeCommands(text: string): LogicalCommand[] {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: false, strict: false });
  const out: LogicalCommand[] = [];
  visit(doc, {
    Pair(_k, pair: Pair) {
      if (isScalar(pair.key) && (pair.key.value === 'command' || pair.key.value === 'entrypoint'))
        out.push(...composeValueCommands(pair.value as YamlNode | null, lc, text));
    },
  });
  return out.sort((a, b) => a.line - b.line);
}

/**
 * Logical commands of a GitHub workflow or composite action: every `run:` string. A block literal
 * (`run: |`) is a script, one command per line; a plain, quoted or folded value is one command.
 */
export function workflowCommands(text: string): LogicalCommand[] {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: false, strict: false });
  const out: LogicalCommand[] = [];
  visit(doc, {
    Pair(_k, pair: Pair) {
      if (isScalar(pair.key) && pair.key.value === 'run' && isScalar(pair.value))
        out.push(...yamlScalarCommands(pair.value, lc, true, text));
    },
  });
  return out.sort((a, b) => a.line - b.line);
}

/** Whether a YAML text looks like a workflow (`jobs:` with `steps:`/`runs-on:`) or composite action (`runs:` + `steps:`). */
export function looksLikeWorkflow(text: string): boolean {
  return (
    (/^jobs\s*:/m.test(text) && /^\s+(steps|runs-on)\s*:/m.test(text)) ||
    (/^runs\s*:/m.test(text) && /^\s+steps\s*:/m.test(text))
  );
}

/** Whether a YAML text looks like a compose file (top-level `services:` whose entries have image/build/command). */
export function looksLikeCompose(text: string): boolean {
  return /^services\s*:/m.test(text) && /^\s+(image|build|command|entrypoint)\s*:/m.test(text);
}

// ---------------------------------------------------------------- JSON

function parseJson(text: string): JsonNode | undefined {
  return parseJsonc(text);
}

function prop(obj: JsonNode | undefined, key: string): JsonNode | undefined {
  if (obj?.type !== 'object') return undefined;
  for (let k = obj.props.length - 1; k >= 0; k--) if (obj.props[k].key === key) return obj.props[k].value;
  return undefined;
}

function props(obj: JsonNode | undefined): Array<[string, JsonNode]> {
  return obj?.type === 'object' ? obj.props.map((p) => [p.key, p.value]) : [];
}

function items(node: JsonNode | undefined): JsonNode[] {
  return node?.type === 'array' ? node.items : [];
}

/** A JSON command value: a string is one command; an array of strings is an argv (one command). */
function jsonCommand(node: JsonNode, ln: Lines, extraArgs?: JsonNode): LogicalCommand[] {
  if (node.type === 'string') {
    const args = items(extraArgs).map((c) =>
      c.type === 'string'
        ? c.value
        : c.type === 'object'
          ? String(prop(c, 'value')?.type === 'string' ? (prop(c, 'value') as { value: string }).value : '')
          : '',
    );
    const text = oneLine([String(node.value), ...args.map((a) => argvText([a]))].join(' '));
    return text ? [{ line: ln.at(node.offset), endLine: ln.at(node.offset + node.length - 1), text }] : [];
  }
  if (node.type === 'array') {
    const strs = node.items.filter((c): c is Extract<JsonNode, { type: 'string' }> => c.type === 'string');
    if (!strs.length) return [];
    const text = argvText(strs.map((c) => c.value));
    const last = strs[strs.length - 1];
    return [{ line: ln.at(strs[0].offset), endLine: ln.at(last.offset + last.length - 1), text }];
  }
  return [];
}

/** Logical commands of a package.json: each `scripts` value (one command each). */
export function packageJsonCommands(text: string): LogicalCommand[] {
  const ln = new Lines(text);
  const out: LogicalCommand[] = [];
  for (const [, v] of props(prop(parseJson(text), 'scripts'))) out.push(...jsonCommand(v, ln));
  return out;
}

/** Local binaries of a package.json: the names of its dependencies and devDependencies (npx runs these without fetching). */
export function packageJsonBins(text: string): Set<string> {
  const root = parseJson(text);
  const names = new Set<string>();
  for (const key of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies']) {
    for (const [name] of props(prop(root, key))) {
      names.add(name);
      names.add(name.replace(/^@[^/]+\//, ''));
    }
  }
  return names;
}

/**
 * Logical commands of a devcontainer.json (JSONC): every `*Command` property (initializeCommand,
 * onCreateCommand, updateContentCommand, postCreateCommand, postStartCommand, postAttachCommand) as
 * a string, an argv array, or an object of named commands (each one command).
 */
export function devcontainerCommands(text: string): LogicalCommand[] {
  const ln = new Lines(text);
  const out: LogicalCommand[] = [];
  for (const [k, v] of props(parseJson(text))) {
    if (!/Command$/.test(k)) continue;
    if (v.type === 'object') for (const [, c] of props(v)) out.push(...jsonCommand(c, ln));
    else out.push(...jsonCommand(v, ln));
  }
  return out;
}

/** Logical commands of a .vscode/tasks.json: each task's `command` with its `args` (and the windows/linux/osx variants). */
export function tasksJsonCommands(text: string): LogicalCommand[] {
  const ln = new Lines(text);
  const out: LogicalCommand[] = [];
  const tasks = prop(parseJson(text), 'tasks');
  for (const t of items(tasks)) {
    for (const scope of [t, prop(t, 'windows'), prop(t, 'linux'), prop(t, 'osx')]) {
      const cmd = prop(scope, 'command');
      if (cmd) out.push(...jsonCommand(cmd, ln, prop(scope, 'args') ?? (scope === t ? undefined : prop(t, 'args'))));
    }
  }
  return out.sort((a, b) => a.line - b.line);
}

/**
 * Logical commands of a Jupyter notebook (.ipynb JSON): shell escapes and `%%bash` cell lines of code
 * cells. Lines are lines of the .ipynb file: each `source` array item sits on its own line.
 */
export function notebookCommands(text: string): LogicalCommand[] {
  const ln = new Lines(text);
  const out: LogicalCommand[] = [];
  const cells = prop(parseJson(text), 'cells');
  for (const cell of items(cells)) {
    const type = prop(cell, 'cell_type');
    if (type?.type !== 'string' || type.value !== 'code') continue;
    const src = prop(cell, 'source');
    const parts = src?.type === 'array' ? src.items : src ? [src] : [];
    const cellLines: NumberedLine[] = [];
    for (const p of parts) {
      if (p.type !== 'string') continue;
      const n = ln.at(p.offset);
      const value = String(p.value);
      const split = value.endsWith('\n') ? value.slice(0, -1).split('\n') : value.split('\n');
      for (const s of split) cellLines.push({ n, s });
    }
    out.push(...cellCommands(cellLines));
  }
  return out;
}

/** Logical commands of the text of one notebook cell (a cell document in the editor): lines 1-based within the cell. */
export function notebookCellCommands(text: string): LogicalCommand[] {
  return cellCommands(numbered(text.split(/\r?\n/)));
}
