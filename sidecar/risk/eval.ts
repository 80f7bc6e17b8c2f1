/**
 * Evaluate the risk scanner against a labelled corpus (shared/cases/risk-corpus format). Pure: the
 * caller reads the files. A finding matches a label when (file, line) are equal; it is a true positive
 * only when the class matches too. A class mismatch counts as one miss and one false positive.
 */
import { fileKind, scanText } from './scan';
import type { RiskClass } from './classify';

/** One label of labels.json: `{file, line, end_line, command, risky, class}` (file relative to the corpus dir). */
export interface EvalLabel {
  file: string;
  line: number;
  end_line?: number;
  command?: string;
  risky?: boolean;
  class: string;
}

/** Counts and ratios of one slice. precision = tp/(tp+fp), recall = tp/(tp+fn); 1 when the denominator is 0. */
export interface Metrics {
  tp: number;
  fp: number;
  fn: number;
  precision: number;
  recall: number;
}

/** A miss (label not found with its class) or a false positive (finding with no label of its class). */
export interface EvalMismatch {
  file: string;
  line: number;
  class: string;
  command: string;
  /** For a class mismatch: the other side's class. */
  other?: string;
}

export interface EvalResult {
  files: number;
  labels: number;
  findings: number;
  overall: Metrics;
  byClass: Record<string, Metrics>;
  byKind: Record<string, Metrics>;
  misses: EvalMismatch[];
  falsePositives: EvalMismatch[];
}

interface Counts {
  tp: number;
  fp: number;
  fn: number;
}

function metrics(c: Counts): Metrics {
  return { ...c, precision: c.tp + c.fp ? c.tp / (c.tp + c.fp) : 1, recall: c.tp + c.fn ? c.tp / (c.tp + c.fn) : 1 };
}

/**
 * Scan every file and compare with the labels.
 * @param files the corpus files: `file` relative path (as in the labels), `text` content
 * @param labels the labels (entries with `risky: false` are ignored)
 */
export function evaluate(files: Array<{ file: string; text: string }>, labels: EvalLabel[]): EvalResult {
  const overall: Counts = { tp: 0, fp: 0, fn: 0 };
  const byClass = new Map<string, Counts>();
  const byKind = new Map<string, Counts>();
  const bump = (m: Map<string, Counts>, k: string, f: keyof Counts): void => {
    if (!m.has(k)) m.set(k, { tp: 0, fp: 0, fn: 0 });
    m.get(k)![f]++;
  };
  const misses: EvalMismatch[] = [];
  const falsePositives: EvalMismatch[] = [];
  let nLabels = 0;
  let nFindings = 0;
  for (const { file, text } of files) {
    const kind = fileKind(file, text);
    const want = new Map<number, EvalLabel>();
    for (const l of labels) if (l.file === file && l.risky !== false) want.set(l.line, l);
    const got = new Map<number, { class: RiskClass; command: string }>();
    for (const f of scanText(file, text)) if (!got.has(f.line)) got.set(f.line, f);
    nLabels += want.size;
    nFindings += got.size;
    for (const [line, l] of want) {
      const g = got.get(line);
      if (g && g.class === l.class) {
        overall.tp++;
        bump(byClass, l.class, 'tp');
        bump(byKind, kind, 'tp');
      } else {
        overall.fn++;
        bump(byClass, l.class, 'fn');
        bump(byKind, kind, 'fn');
        misses.push({ file, line, class: l.class, command: l.command ?? '', ...(g ? { other: g.class } : {}) });
      }
    }
    for (const [line, g] of got) {
      const l = want.get(line);
      if (l && l.class === g.class) continue;
      overall.fp++;
      bump(byClass, g.class, 'fp');
      bump(byKind, kind, 'fp');
      falsePositives.push({ file, line, class: g.class, command: g.command, ...(l ? { other: l.class } : {}) });
    }
    if (!want.size && !got.size && !byKind.has(kind)) byKind.set(kind, { tp: 0, fp: 0, fn: 0 });
  }
  const obj = (m: Map<string, Counts>): Record<string, Metrics> =>
    Object.fromEntries([...m.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, metrics(v)]));
  return {
    files: files.length,
    labels: nLabels,
    findings: nFindings,
    overall: metrics(overall),
    byClass: obj(byClass),
    byKind: obj(byKind),
    misses,
    falsePositives,
  };
}

const pct = (x: number): string => x.toFixed(3);

/** Human-readable report of an evaluation: overall, per class, per file kind, then misses and false positives. */
export function formatEval(r: EvalResult): string {
  const rows: string[][] = [['', 'precision', 'recall', 'tp', 'fp', 'fn']];
  const row = (name: string, m: Metrics): void => {
    rows.push([name, pct(m.precision), pct(m.recall), String(m.tp), String(m.fp), String(m.fn)]);
  };
  row('overall', r.overall);
  for (const [k, m] of Object.entries(r.byClass)) row(`class ${k}`, m);
  for (const [k, m] of Object.entries(r.byKind)) row(`kind ${k}`, m);
  const w = rows[0].map((_, i) => Math.max(...rows.map((x) => x[i].length)));
  const table = rows.map((x) => x.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ')).join('\n');
  const list = (title: string, xs: EvalMismatch[], otherName: string): string =>
    xs.length
      ? `\n${title} (${xs.length}):\n${xs.map((x) => `  ${x.file}:${x.line}  ${x.class}${x.other ? ` (${otherName} ${x.other})` : ''}  ${x.command}`).join('\n')}`
      : `\n${title}: none`;
  return `${r.files} files, ${r.labels} labelled commands, ${r.findings} findings\n${table}${list('Misses', r.misses, 'found as')}${list('False positives', r.falsePositives, 'labelled')}`;
}
