/**
 * Finds import cycles among the project's own TypeScript modules: `npm run lint` runs it, and
 * test/unit/import-cycles.test.ts runs it over the repository. (ESLint's import/no-cycle did the same
 * in about 80% of a lint run's time: minutes on a busy 2-core machine; this takes about a second.)
 *
 * What counts: static `import … from`, side-effect `import '…'`, `export … from` and
 * `import x = require('…')` of a relative path that resolves to a .ts file. What does not: `import
 * type` / `export type` and imports whose every name is marked `type` (erased at build time), and
 * packages. A cycle is reported once per strongly connected component, as one concrete path.
 * Usage: tsx scripts/check-import-cycles.ts [DIR...]   (default: the folders tsconfig.json includes)
 * Exit code: 0 without cycles, 1 with (each printed as `import cycle: a.ts -> b.ts -> a.ts`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/** The repository root. */
const ROOT = path.resolve(__dirname, '..');
/** Folders searched by default (tsconfig.json's include). */
export const DEFAULT_DIRS = ['extension', 'sidecar', 'webview-ui', 'test', 'bench', 'scripts'];
/** Folders never searched: dependencies, the code-server host, caches, fixtures. */
const SKIP = new Set(['node_modules', 'out', '.cache', 'host', 'fixtures', 'cases', '.git']);

/** Every .ts file under `dir` (absolute paths, sorted), leaving out SKIP folders and .d.ts files. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (!SKIP.has(e.name)) walk(p);
      } else if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
    }
  };
  if (existsSync(dir) && statSync(dir).isDirectory()) walk(dir);
  return out;
}

/** The .ts file a relative specifier names (x.ts, x/index.ts), or undefined (a package, JSON, ...). */
function resolve(from: string, spec: string): string | undefined {
  if (!spec.startsWith('./') && !spec.startsWith('../')) return undefined;
  const base = path.resolve(path.dirname(from), spec.replace(/\.js$/, ''));
  for (const c of [`${base}.ts`, path.join(base, 'index.ts'), base]) {
    if (c.endsWith('.ts') && existsSync(c) && statSync(c).isFile()) return c;
  }
  return undefined;
}

/** Whether named bindings are all `type`-marked (`import { type A, type B }`: erased). */
function allTypeOnly(elements: ts.NodeArray<ts.ImportSpecifier | ts.ExportSpecifier>): boolean {
  return elements.length > 0 && elements.every((e) => e.isTypeOnly);
}

/** The relative module specifiers that `file` loads at run time. */
export function runtimeImports(file: string, text: string = readFileSync(file, 'utf8')): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false);
  const out: string[] = [];
  for (const s of src.statements) {
    if (ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier)) {
      const c = s.importClause;
      if (c?.isTypeOnly) continue;
      const nb = c?.namedBindings;
      if (c && !c.name && nb && ts.isNamedImports(nb) && allTypeOnly(nb.elements)) continue;
      out.push(s.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(s) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
      if (s.isTypeOnly) continue;
      if (s.exportClause && ts.isNamedExports(s.exportClause) && allTypeOnly(s.exportClause.elements)) continue;
      out.push(s.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(s) &&
      !s.isTypeOnly &&
      ts.isExternalModuleReference(s.moduleReference) &&
      ts.isStringLiteral(s.moduleReference.expression)
    ) {
      out.push(s.moduleReference.expression.text);
    }
  }
  return out;
}

/**
 * The import cycles among the .ts files under `dirs`: one path per strongly connected component
 * (Tarjan), as repo-relative paths with the first file repeated at the end.
 */
export function findImportCycles(dirs: string[] = DEFAULT_DIRS, root: string = ROOT): string[][] {
  const files = dirs.flatMap((d) => tsFiles(path.resolve(root, d)));
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = runtimeImports(f)
      .map((s) => resolve(f, s))
      .filter((d): d is string => !!d);
    graph.set(f, [...new Set(deps)]);
  }
  // Tarjan's strongly connected components, iteratively (no recursion limit on deep import chains)
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const sccs: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; i: number }> = [{ node: start, i: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const top = work[work.length - 1];
      const deps = graph.get(top.node) ?? [];
      if (top.i < deps.length) {
        const d = deps[top.i++];
        if (!graph.has(d)) continue;
        if (!index.has(d)) {
          index.set(d, next);
          low.set(d, next++);
          stack.push(d);
          onStack.add(d);
          work.push({ node: d, i: 0 });
        } else if (onStack.has(d)) low.set(top.node, Math.min(low.get(top.node)!, index.get(d)!));
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const scc: string[] = [];
        let n: string;
        do {
          n = stack.pop()!;
          onStack.delete(n);
          scc.push(n);
        } while (n !== top.node);
        if (scc.length > 1 || (graph.get(top.node) ?? []).includes(top.node)) sccs.push(scc);
      }
    }
  }
  // one concrete cycle per component: breadth-first from its first file (sorted) back to itself
  const rel = (f: string): string => path.relative(root, f).split(path.sep).join('/');
  return sccs
    .map((scc) => {
      const members = new Set(scc);
      const first = [...scc].sort()[0];
      const prev = new Map<string, string>();
      const queue = [first];
      let end: string | undefined;
      while (queue.length && !end) {
        const n = queue.shift()!;
        for (const d of graph.get(n) ?? []) {
          if (!members.has(d)) continue;
          if (d === first) {
            end = n;
            break;
          }
          if (!prev.has(d)) {
            prev.set(d, n);
            queue.push(d);
          }
        }
      }
      const cycle = [first];
      for (let n = end; n && n !== first; n = prev.get(n)) cycle.splice(1, 0, n);
      cycle.push(first);
      return cycle.map(rel);
    })
    .sort((a, b) => a[0].localeCompare(b[0]));
}

if (require.main === module) {
  const dirs = process.argv.slice(2);
  const cycles = findImportCycles(dirs.length ? dirs : DEFAULT_DIRS);
  for (const c of cycles) process.stderr.write(`import cycle: ${c.join(' -> ')}\n`);
  if (cycles.length) {
    process.stderr.write(
      `${cycles.length} import cycle(s): move what both sides need into a module of its own, or make one side import only types.\n`,
    );
    process.exitCode = 1;
  }
}
