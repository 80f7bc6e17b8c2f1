/**
 * Evaluate the risk classifier on labelled terminal commands (test/cases/agent-commands/commands.jsonl):
 * one command a case, labelled `risky` with a class or `safe`, in a `dev` or `held-out` split. Pure: the
 * caller reads the file and passes the classifier, so the same code measures any version of the engine.
 *
 * Two views, both per split:
 * - detection (what a hook or lens needs first): a risky case counts as found when the classifier flags it
 *   with any class; a safe case flagged is a false alarm;
 * - class-exact: found only with the labelled class; a wrong class is one miss of the labelled class and
 *   one false positive of the class given.
 */

/** One labelled command (a line of commands.jsonl). */
export interface CommandCase {
  id: string;
  command: string;
  label: 'risky' | 'safe';
  /** The class of a risky command. */
  class?: string;
  source: { repo: string; issue: number; url: string };
  who?: string;
  split: 'dev' | 'held-out';
  note?: string;
}

/** Counts and ratios. precision = tp/(tp+fp), recall = tp/(tp+fn); 1 when the denominator is 0. */
export interface CommandMetrics {
  tp: number;
  fp: number;
  fn: number;
  precision: number;
  recall: number;
}

/** A case the classifier got wrong: `got` is its class (null = not flagged). */
export interface CommandMismatch {
  id: string;
  command: string;
  want: string | null;
  got: string | null;
  source: string;
}

export interface SplitResult {
  cases: number;
  risky: number;
  safe: number;
  /** Risky vs safe, class ignored. */
  detection: CommandMetrics;
  /** Class must match. */
  exact: CommandMetrics;
  /** Per labelled class: detection recall (found with any class) and class-exact metrics. */
  byClass: Record<string, { cases: number; detected: number; exact: CommandMetrics }>;
  misses: CommandMismatch[];
  falseAlarms: CommandMismatch[];
  wrongClass: CommandMismatch[];
}

export interface CommandEvalResult {
  dev: SplitResult;
  heldOut: SplitResult;
}

function metrics(tp: number, fp: number, fn: number): CommandMetrics {
  return { tp, fp, fn, precision: tp + fp ? tp / (tp + fp) : 1, recall: tp + fn ? tp / (tp + fn) : 1 };
}

/**
 * Parse commands.jsonl text. Throws an Error naming the line for a line that is not a case.
 * @param text JSON Lines, one CommandCase per non-empty line
 */
export function parseCommandCases(text: string): CommandCase[] {
  const out: CommandCase[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    let c: CommandCase;
    try {
      c = JSON.parse(line) as CommandCase;
    } catch {
      throw new Error(`line ${i + 1} is not JSON`);
    }
    if (
      typeof c.command !== 'string' ||
      (c.label !== 'risky' && c.label !== 'safe') ||
      (c.split !== 'dev' && c.split !== 'held-out') ||
      (c.label === 'risky' && typeof c.class !== 'string')
    ) {
      throw new Error(
        `line ${i + 1} is not a case: needs command, label risky|safe (risky with a class) and split dev|held-out`,
      );
    }
    out.push(c);
  });
  return out;
}

function evaluateSplit(cases: CommandCase[], classify: (command: string) => string | null): SplitResult {
  let dTp = 0;
  let dFp = 0;
  let dFn = 0;
  let eTp = 0;
  let eFp = 0;
  let eFn = 0;
  const per = new Map<string, { cases: number; detected: number; tp: number; fp: number; fn: number }>();
  const slot = (k: string): { cases: number; detected: number; tp: number; fp: number; fn: number } => {
    let s = per.get(k);
    if (!s) per.set(k, (s = { cases: 0, detected: 0, tp: 0, fp: 0, fn: 0 }));
    return s;
  };
  const misses: CommandMismatch[] = [];
  const falseAlarms: CommandMismatch[] = [];
  const wrongClass: CommandMismatch[] = [];
  for (const c of cases) {
    const got = classify(c.command);
    const want = c.label === 'risky' ? (c.class ?? null) : null;
    const mm = (): CommandMismatch => ({
      id: c.id,
      command: c.command,
      want,
      got,
      source: `${c.source.repo}#${c.source.issue}`,
    });
    if (want) {
      const s = slot(want);
      s.cases++;
      if (got) {
        dTp++;
        s.detected++;
      } else {
        dFn++;
        misses.push(mm());
      }
      if (got === want) {
        eTp++;
        s.tp++;
      } else {
        eFn++;
        s.fn++;
        if (got) {
          eFp++;
          slot(got).fp++;
          wrongClass.push(mm());
        }
      }
    } else if (got) {
      dFp++;
      eFp++;
      slot(got).fp++;
      falseAlarms.push(mm());
    }
  }
  const byClass = Object.fromEntries(
    [...per.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, s]) => [k, { cases: s.cases, detected: s.detected, exact: metrics(s.tp, s.fp, s.fn) }]),
  );
  const risky = cases.filter((c) => c.label === 'risky').length;
  return {
    cases: cases.length,
    risky,
    safe: cases.length - risky,
    detection: metrics(dTp, dFp, dFn),
    exact: metrics(eTp, eFp, eFn),
    byClass,
    misses,
    falseAlarms,
    wrongClass,
  };
}

/**
 * Classify every case and score dev and held-out separately.
 * @param classify the engine under test: command text → class, or null when not risky
 */
export function evaluateCommands(
  cases: CommandCase[],
  classify: (command: string) => string | null,
): CommandEvalResult {
  return {
    dev: evaluateSplit(
      cases.filter((c) => c.split === 'dev'),
      classify,
    ),
    heldOut: evaluateSplit(
      cases.filter((c) => c.split === 'held-out'),
      classify,
    ),
  };
}

const f3 = (x: number): string => x.toFixed(3);

/** The table of one split: detection and class-exact precision/recall, then one row per class. */
export function formatSplit(name: string, r: SplitResult): string {
  const rows: string[][] = [['', 'cases', 'found', 'precision', 'recall', 'exact P', 'exact R']];
  rows.push([
    `${name}: all`,
    `${r.risky}+${r.safe}`,
    `${r.detection.tp}/${r.risky}`,
    f3(r.detection.precision),
    f3(r.detection.recall),
    f3(r.exact.precision),
    f3(r.exact.recall),
  ]);
  for (const [k, s] of Object.entries(r.byClass)) {
    if (!s.cases && !s.exact.fp) continue;
    rows.push([
      `  ${k}`,
      String(s.cases),
      `${s.detected}/${s.cases}`,
      '',
      s.cases ? f3(s.detected / s.cases) : '-',
      f3(s.exact.precision),
      f3(s.exact.recall),
    ]);
  }
  const w = rows[0].map((_, i) => Math.max(...rows.map((x) => x[i].length)));
  return rows.map((x) => x.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ')).join('\n');
}

/**
 * Human-readable report: dev and held-out tables; the mismatches of dev (and of held-out when `showHeldOut`).
 * "precision"/"recall" are detection (risky vs safe); "exact P/R" need the class; per class, "recall" is the
 * share found with any class.
 */
export function formatCommandEval(r: CommandEvalResult, showHeldOut = false): string {
  const list = (title: string, xs: CommandMismatch[]): string =>
    xs.length
      ? `\n${title} (${xs.length}):\n${xs.map((x) => `  ${x.id} ${x.want ?? 'safe'} -> ${x.got ?? 'safe'}  ${x.command}  [${x.source}]`).join('\n')}`
      : `\n${title}: none`;
  const detail = (name: string, s: SplitResult): string =>
    `${list(`${name} misses`, s.misses)}${list(`${name} false alarms`, s.falseAlarms)}${list(`${name} wrong class`, s.wrongClass)}`;
  const held = showHeldOut
    ? detail('held-out', r.heldOut)
    : `\nheld-out mismatches: ${r.heldOut.misses.length} misses, ${r.heldOut.falseAlarms.length} false alarms, ${r.heldOut.wrongClass.length} wrong class (not listed: no rule is tuned on them; --show-held-out prints them)`;
  return `${formatSplit('dev', r.dev)}\n\n${formatSplit('held-out', r.heldOut)}\n${detail('dev', r.dev)}${held}`;
}
