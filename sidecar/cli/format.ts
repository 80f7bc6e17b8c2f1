/**
 * Human output of the CLI: tables, restore point and memory reports. Pure functions. Sizes, ages and
 * one-line excerpts come from the shared sidecar/protocol/format.ts (the extension and the webviews
 * use the same), so every front end says "12 MiB" and "5m ago" alike.
 */
import type {
  ChangeSummary,
  EntrySample,
  GitHead,
  GitRepoChange,
  MemoryFile,
  NextAction,
  PathSample,
  RestorePoint,
  RestorePreview,
  ResultOf,
  RiskFinding,
  StoreDescription,
} from '../protocol';
import {
  escapeControls,
  displayPath,
  firstLine,
  formatAge as age,
  formatBytes as size,
  oneLine,
} from '../protocol/format';
import { storeSummary } from '../protocol/stores';

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(input: string[][]): string {
  // one row per line: control characters (a newline in a label) would break the columns
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const rows = input.map((r) => r.map((c) => c.replace(/[\u0000-\u001f\u007f]+/g, ' ')));
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, [...c].length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i] - [...c].length)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function reasonText(rp: RestorePoint): string {
  const r = rp.reason;
  if (!r) return '';
  // an agent's own call (hook, MCP): who, which session and tool, and the command or path
  if (r.origin && r.text) return r.text;
  if (r.command) return r.risk ? `${r.command} (${r.risk})` : r.command;
  return r.text ?? '';
}

/** The message for a pre restore point whose post is missing (its command, or whatever wrapped it, died). */
export const PRE_WITHOUT_POST = 'pre without post: the command did not finish';

/**
 * KIND of a restore point in the list, with its pair: `pre, post ID`, `post of ID`, or for a pre
 * whose post is missing PRE_WITHOUT_POST.
 */
export function kindText(p: RestorePoint, points: readonly RestorePoint[]): string {
  let k: string = p.kind;
  if (p.kind === 'pre') {
    const post = points.find((x) => x.kind === 'post' && x.pairOf === p.id);
    k = post ? `pre, post ${post.id}` : PRE_WITHOUT_POST;
  } else if (p.kind === 'post' && p.pairOf) k = `post of ${p.pairOf}`;
  return k + (p.important ? ', important' : '');
}

/** Restore points, newest first: ID, AGE, STATUS, KIND (with pairs), SIZE (bytes newly stored), LABEL, REASON. */
export function restorePointTable(points: RestorePoint[], target: string, now = Date.now()): string {
  if (!points.length)
    return `No restore points of ${target} yet. Create one: agentkeep restore-point create --target ${target}`;
  const sorted = [...points].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt));
  const row = (p: RestorePoint): string[] => {
    const kind = kindText(p, points);
    return [p.id, age(p.createdAt, now), p.status, kind, size(p.machine.newBytes), p.label, reasonText(p)];
  };
  return table([['ID', 'AGE', 'STATUS', 'KIND', 'SIZE', 'LABEL', 'REASON'], ...sorted.map(row)]);
}

/** Prune result, one line per restore point: "deleted|kept  ID  reason" (dry run: "would delete"). */
export function pruneReport(
  r: {
    deleted: Array<{ id: string; reason: string }>;
    kept: Array<{ id: string; reason: string }>;
    freedBytes: number;
    estimatedFreeBytes?: number;
  },
  dryRun: boolean,
): string {
  const del = dryRun ? 'would delete' : 'deleted';
  const rows = [...r.deleted.map((d) => [del, d.id, d.reason]), ...r.kept.map((k) => ['kept', k.id, k.reason])];
  const est =
    r.estimatedFreeBytes !== undefined && r.deleted.length ? ` (freeing about ${size(r.estimatedFreeBytes)})` : '';
  const head = dryRun
    ? `Dry run: ${r.deleted.length} restore point(s) would be deleted${est}, ${r.kept.length} kept; nothing was changed.`
    : `Deleted ${r.deleted.length} restore point(s), kept ${r.kept.length}; freed ${size(r.freedBytes)}.`;
  return rows.length ? `${head}\n${table(rows)}` : head;
}

/** restore-point usage: one summary line (use, cap, level), then ID / SIZE / ONLY-IT per restore point. */
export function usageReport(r: {
  target: string;
  bytes: number;
  metaBytes?: number;
  stateDirBytes?: number;
  capBytes: number;
  level: 'ok' | 'near' | 'over';
  points: Array<{ id: string; bytes: number; newBytes: number }>;
}): string {
  const pct = r.capBytes ? Math.round((r.bytes / r.capBytes) * 100) : 0;
  const warn =
    r.level === 'over'
      ? ' OVER THE CAP: prune some (restore-point prune --dry-run shows what)'
      : r.level === 'near'
        ? ' (near the cap)'
        : '';
  const meta = r.metaBytes ? ` (${size(r.metaBytes)} of it manifests and journal)` : '';
  const all =
    r.stateDirBytes !== undefined ? ` The state dir holds ${size(r.stateDirBytes)} in all (every target).` : '';
  const head = `Restore points of ${r.target} use ${size(r.bytes)}${meta} of the ${size(r.capBytes)} cap (${pct}%)${warn}.${all}`;
  if (!r.points.length) return head;
  return `${head}\n${table([['ID', 'SIZE', 'ONLY IT'], ...r.points.map((p) => [p.id, size(p.bytes), size(p.newBytes)])])}`;
}

/**
 * One line about a created restore point.
 * @param snapshotNoun what the backend's snapshots are called (target.describe `snapshotNoun`, e.g.
 *   "btrfs snapshot"; default "snapshot")
 */
export function createdLine(rp: RestorePoint, snapshotNoun = 'snapshot'): string {
  const m = rp.machine;
  const agent = rp.agent.reduce((n, a) => n + a.files.length, 0);
  // A named snapshot (btrfs, a hypervisor's) walks nothing, so it has no counts (restore-point usage
  // measures btrfs ones): name it instead (warnings follow as Note lines).
  const what = m.snapname
    ? `${snapshotNoun} ${m.snapname}${m.vmstate ? ' with RAM state' : ''}`
    : `${m.files} ${m.files === 1 ? 'entry' : 'entries'}, ${size(m.bytes)} (${size(m.newBytes)} new)`;
  return (
    `Created restore point ${rp.id} "${escapeControls(rp.label)}": ${what} in ${Math.round(m.durationMs)} ms` +
    (rp.agent.length ? `; agent state: ${agent} files from ${rp.agent.length} store(s)` : '')
  );
}

function list(title: string, paths: string[], max = 10): string[] {
  if (!paths.length) return [];
  const shown = paths.slice(0, max).map((p) => `    ${displayPath(p)}`);
  if (paths.length > max) shown.push(`    … and ${paths.length - max} more`);
  return [`  ${title} (${paths.length}):`, ...shown];
}

/** What a restore will do / did, for the confirmation and the result (only the parts the scope touches). */
export function changeSummary(c: ChangeSummary, future: boolean, scope: 'machine' | 'agent' | 'both' = 'both'): string {
  const w = future ? 'will be' : 'were';
  const machine = scope !== 'agent';
  const agent = scope !== 'machine';
  const lines = [
    ...(machine ? list(`created since the restore point, ${w} removed`, c.added) : []),
    ...(machine ? list(`deleted since the restore point, ${w} brought back`, c.removed) : []),
    ...(machine ? list(`changed since the restore point, ${w} reverted`, c.changed) : []),
    ...(agent ? list(`agent-state files that ${w} put back`, c.agentChanged) : []),
    ...(agent && c.agentLeftAlone
      ? list(`agent-state files left alone (broken when the restore point was taken, not in it)`, c.agentLeftAlone)
      : []),
  ];
  return lines.length ? lines.join('\n') : '  No differences: the tree already matches the restore point.';
}

/**
 * Memory stores: per store (when `descriptions` are given) a line saying what it is and can do, then
 * per file a header with usage, then one line per entry (id, first line of text). A broken file
 * (MemoryFile.broken) says BROKEN instead of a count it does not know, then what is broken and the fix.
 * A store whose every file is read-only (MemoryFile.readOnly) is headed "read-only", never "editable".
 */
export function memoryTable(files: MemoryFile[], descriptions: readonly StoreDescription[] = []): string {
  const out: string[] = [];
  // one heading per store (what it is and can do), then its files; files of no described store last
  const groups = descriptions.map((d) => ({
    d: d as StoreDescription | undefined,
    files: files.filter((f) => f.store === d.store),
  }));
  const rest = files.filter((f) => !descriptions.some((d) => d.store === f.store));
  if (rest.length) groups.push({ d: undefined, files: rest });
  for (const { d, files: group } of groups) {
    // a kind that can edit (capabilities.edit) can still be read-only here (mem0 and Agent Zero without
    // their API's URL): when every file says so, the heading says read-only too, not "editable"
    const readOnly = group.length > 0 && group.every((f) => f.readOnly);
    if (d)
      out.push(
        `Store ${d.store}: ${storeSummary(readOnly ? { ...d, capabilities: { ...d.capabilities, edit: false } } : d)}`,
      );
    out.push(...memoryFileLines(group));
  }
  return out.join('\n');
}

/** The lines of memoryTable for some files (without store headings). */
function memoryFileLines(files: MemoryFile[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const u = f.usage;
    const pct = u?.limit ? Math.round((100 * u.chars) / u.limit) : 0;
    const over = u && u.chars > u.limit ? ' OVER LIMIT' : '';
    const note = u?.limitNote ? ` (${u.limitNote})` : '';
    const use = u && !f.broken ? `, ${u.chars}/${u.limit} chars (${pct}%)${over}${note}` : '';
    const count = `${f.entries.length} ${f.entries.length === 1 ? 'entry' : 'entries'}`;
    const known = f.entries.length ? `${count} readable` : 'entries unknown';
    const broken = `BROKEN (${known}; writes refused)`;
    const state = f.broken ? broken : count;
    out.push(`${f.file} (${f.kind}): ${state}${use}${f.readOnly ? ` [read-only: ${f.readOnly}]` : ''}`);
    if (f.broken) out.push(`  error: ${f.broken.message}`, ...(f.broken.hint ? [`  fix: ${f.broken.hint}`] : []));
    for (const w of f.warnings ?? []) if (!f.broken || !w.includes(f.broken.message)) out.push(`  warning: ${w}`);
    for (const e of f.entries) {
      const more = e.text.trim().includes('\n') ? ' …' : '';
      out.push(`  ${e.id}  ${firstLine(e.text, 100)}${more}`);
    }
  }
  return out;
}

/**
 * agent status: the target (backend, reachable or why not), its restore points and the newest one,
 * then per store "ok", why it cannot be read, or BROKEN with each broken part (which file, what,
 * the fix) and whether the rest can be read; then an interrupted restore and the sidecar version.
 * `commandOf` renders a next action as a command line (cli/actions.ts).
 */
export function agentStatusText(
  s: ResultOf<'agentStatus'>,
  commandOf: (a: NextAction) => string | undefined,
  now = Date.now(),
): string {
  const out = [`Agent ${s.target} (${s.backend}): ${s.reachable ? 'reachable' : `NOT REACHABLE: ${s.message ?? ''}`}`];
  const latest = s.latest
    ? `, newest ${s.latest.id} "${escapeControls(s.latest.label)}" (${age(s.latest.createdAt, now)})`
    : '';
  out.push(`  restore points: ${s.restorePoints}${latest}`);
  for (const st of s.stores) {
    const b = st.broken;
    // writes the agent staged for approval (Hermes memory.write_approval): listed by memory list
    const staged = st.pendingWrites
      ? `; ${st.pendingWrites} ${st.pendingWrites === 1 ? 'write waits' : 'writes wait'} for approval (memory list shows ${st.pendingWrites === 1 ? 'it' : 'them'})`
      : '';
    const cp = st.configProblem;
    const config = cp ? [`    warning (config): ${cp.message}`, ...(cp.hint ? [`      fix: ${cp.hint}`] : [])] : [];
    if (!b) {
      out.push(`  store ${st.store}: ${st.ok ? 'ok' : `CANNOT BE READ: ${st.message ?? ''}`}${staged}`, ...config);
      continue;
    }
    const rest = b.readable === 'none' ? 'nothing readable' : 'the rest is readable';
    out.push(`  store ${st.store}: BROKEN (${rest}; writes to the broken files refused)`);
    // each message names its file
    for (const p of b.parts) {
      const readable = p.entries ? `${p.entries} entries readable` : 'entries unknown';
      const what = p.part === 'history' ? 'history: provenance unavailable' : readable;
      out.push(`    error (${what}): ${p.message}`, ...(p.hint ? [`      fix: ${p.hint}`] : []));
    }
    out.push(...config);
  }
  const ir = s.interruptedRestore;
  if (ir) {
    out.push(
      `  warning: a restore of ${ir.id} (scope ${ir.scope}) started ${ir.startedAt} never finished: ` +
        'the target may be half-restored.',
    );
    for (const a of ir.actions ?? []) out.push(`    ${a.title}${commandOf(a) ? `: ${commandOf(a)}` : ''}`);
  }
  out.push(`  sidecar ${s.version}`);
  return out.join('\n');
}

/** Findings as `file:line[-endLine]  class  command  why` (why: the reason without its class prefix). */
export function findingsTable(findings: RiskFinding[]): string {
  if (!findings.length) return 'No risky commands found.';
  const why = (f: RiskFinding): string => (f.reason ?? '').replace(/^[a-z-]+: /, '');
  return table(
    findings.map((f) => [
      `${f.file}:${f.line}${f.endLine !== f.line ? '-' + f.endLine : ''}`,
      f.class,
      f.command,
      ...(why(f) ? [`— ${why(f)}`] : []),
    ]),
  );
}

/** Quote for a POSIX shell (single quotes), for the undo commands the CLI prints. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function indent(text: string, pad = '    '): string {
  return text
    .split('\n')
    .map((l) => pad + l)
    .join('\n');
}

/** memory show: the entry, its file and usage, then the provenance traces (or the note). */
export function memoryShowText(r: ResultOf<'memoryShow'>): string {
  const e = r.entry;
  const u = r.file.usage;
  const lines = [
    `Entry ${e.id} (${e.area ?? r.file.kind}) in ${r.file.file}${u ? `, file ${u.chars}/${u.limit} chars` : ''}${r.file.readOnly ? ` [read-only: ${r.file.readOnly}]` : ''}`,
    indent(e.text),
    ...(e.createdAt || e.updatedAt
      ? [`  time: ${e.createdAt ?? ''}${e.updatedAt ? ` updated ${e.updatedAt}` : ''}`]
      : []),
    ...(r.file.warnings ?? []).map((w) => `  warning: ${w}`),
    'Provenance:',
  ];
  if (!r.provenance.traces.length) lines.push(`  ${r.provenance.note ?? 'no trace'}`);
  for (const t of r.provenance.traces) {
    lines.push(
      `  ${t.action}  ${t.time ?? '(no time)'}  session ${t.session ?? '?'}${t.source ? ` (${t.source})` : ''}${t.messageId !== undefined ? `  message ${t.messageId}` : ''}`,
    );
    if (t.previous) lines.push(`    previous: ${firstLine(t.previous, 100)}`);
    if (t.message) lines.push(`    call: ${oneLine(t.message, 160)}`);
  }
  if (r.provenance.traces.length && r.provenance.note) lines.push(`  note: ${r.provenance.note}`);
  return lines.join('\n');
}

/** memory diff: added / removed / changed entries, then the outside-world actions since. */
export function memoryDiffText(r: ResultOf<'memoryDiff'>, from: string, to: string): string {
  const first = (t?: string): string => firstLine(t ?? '', 100);
  const lines = [`Memory from restore point ${from} to ${to}:`];
  for (const w of r.warnings ?? []) lines.push(`  warning: ${w}`);
  if (!r.added.length && !r.removed.length && !r.changed.length) {
    lines.push(r.warnings?.length ? '  No entry changed in the files compared.' : '  No entry changed.');
  }
  for (const c of r.added) lines.push(`  + ${c.after!.id}  ${first(c.after!.text)}`);
  for (const c of r.removed) lines.push(`  - ${c.before!.id}  ${first(c.before!.text)}`);
  for (const c of r.changed) lines.push(`  ~ ${c.before!.id} -> ${c.after!.id}  ${first(c.after!.text)}`);
  const acts = r.actions ?? [];
  if (acts.length) {
    lines.push(`Actions since ${from} that a rollback cannot undo (${acts.length}):`);
    for (const a of acts.slice(0, 20)) lines.push(`  ${a.time ?? '?'}  ${oneLine(a.message ?? '', 140)}`);
    if (acts.length > 20) lines.push(`  … and ${acts.length - 20} more`);
  }
  return lines.join('\n');
}

/** A commit for people: its first 7 hex digits. */
function shortSha(c: string | undefined): string {
  return c ? c.slice(0, 7) : '(no commits)';
}

/** Where a HEAD points, e.g. "main 3c1d2e4", "detached 9a8b7c6". */
function headText(h: GitHead | undefined): string {
  if (!h) return '(none)';
  const where = h.ref ? h.ref.replace(/^refs\/heads\//, '') : 'detached';
  return `${where} ${shortSha(h.commit)}`;
}

/** One line per git repository a restore changes (restorePoint.preview `gitRepos`). */
export function gitRepoLines(repos: GitRepoChange[]): string[] {
  if (!repos.length) return [];
  const lines = [`  git repositories whose HEAD or branches the restore changes (${repos.length}):`];
  for (const r of repos) {
    if (r.effect === 'removed') {
      const head = headText(r.head.current);
      lines.push(`    ${displayPath(r.path)}: made since the restore point, the restore deletes it (HEAD ${head})`);
    } else if (r.effect === 'brought-back') {
      lines.push(
        `    ${displayPath(r.path)}: deleted since, the restore brings it back (HEAD ${headText(r.head.restored)})`,
      );
    } else {
      const branches = r.branches.map((b) => {
        const from = b.current ? shortSha(b.current) : '(none)';
        return `${b.name} ${from} -> ${b.restored ? shortSha(b.restored) : '(deleted)'}`;
      });
      const known = r.head.current || r.head.restored;
      const head = known ? `HEAD ${headText(r.head.current)} -> ${headText(r.head.restored)}` : 'HEAD unknown';
      lines.push(`    ${displayPath(r.path)}: ${head}${branches.length ? `; branch ${branches.join(', ')}` : ''}`);
    }
    if (r.note) lines.push(`      note: ${r.note}`);
  }
  if (repos.some((r) => r.effect !== 'brought-back')) {
    lines.push(
      '  Commits made since leave these repositories with their .git ' +
        '(the state before the restore is kept as the undo restore point).',
    );
  }
  return lines;
}

/** "  title (count):" and the first `max` top-most paths of a preview list, folded directories with "(+N inside)". */
function sampleLines(title: string, s: PathSample, max = 10): string[] {
  if (!s.count) return [];
  const shown = s.items.slice(0, max);
  const lines = shown.map((g) => `    ${displayPath(g.path)}${g.inside ? `/ (+${g.inside} inside)` : ''}`);
  const rest = s.count - shown.reduce((n, g) => n + 1 + g.inside, 0);
  if (rest > 0) lines.push(`    … and ${rest} more`);
  return [`  ${title} (${s.count}):`, ...lines];
}

/** Entries of a memory sample, one line each (id, first line), at most `max`. */
function entryLines(s: EntrySample, max = 10): string[] {
  const lines = s.items.slice(0, max).map((e) => `    ${e.id}  ${firstLine(e.text, 100)}`);
  if (s.count > max) lines.push(`    … and ${s.count - max} more`);
  return lines;
}

/**
 * The restore confirmation, from restorePoint.preview: what the restore removes, reverts and brings
 * back (or what it does to a VM), git repositories whose HEAD moves, memory entries lost, brought back
 * and kept, the agent's outside-world actions since (never undone), and the preview's warnings.
 */
export function previewText(p: RestorePreview, target: string): string {
  const lines = [`Restoring ${p.restorePoint.id} (scope ${p.scope}) on ${target}:`];
  const e = p.effects;
  if (e?.stopsGuest) lines.push('  A running guest is hard-stopped by the rollback (unsaved work in it is lost).');
  if (e?.wholeMachine) {
    const unless = e.canStartAfter ? ' unless --start' : '';
    lines.push(
      e.resumesRam
        ? '  The whole VM (disks and RAM) goes back to the restore point.'
        : `  The guest's disks go back to the restore point; without RAM state it stays stopped${unless}.`,
    );
  }
  const files = [
    ...(p.machine ? sampleLines('created since the restore point, will be removed', p.machine.added) : []),
    ...(p.machine ? sampleLines('deleted since the restore point, will be brought back', p.machine.removed) : []),
    ...(p.machine ? sampleLines('changed since the restore point, will be reverted', p.machine.changed) : []),
    ...(p.agentFiles ? sampleLines('agent-state files that will be put back', p.agentFiles) : []),
    ...(p.agentLeftAlone
      ? sampleLines(
          'agent-state files left alone (broken when the restore point was taken, not in it)',
          p.agentLeftAlone,
        )
      : []),
  ];
  if (files.length) lines.push(...files);
  else if (!e) lines.push('  No differences: the tree already matches the restore point.');
  lines.push(...gitRepoLines(p.gitRepos));
  const m = p.memory;
  if (m?.lost.count)
    lines.push(`  memory learned since the restore point, will be lost (${m.lost.count}):`, ...entryLines(m.lost));
  if (m?.broughtBack.count)
    lines.push(
      `  memory removed or changed since, will come back (${m.broughtBack.count}):`,
      ...entryLines(m.broughtBack),
    );
  if (m?.kept.count) {
    const n = `${m.kept.count} ${m.kept.count === 1 ? 'entry' : 'entries'}`;
    lines.push(`  memory learned since the restore point is kept (scope machine): ${n}`);
  }
  const acts = p.actions;
  if (acts.count) {
    lines.push(`  actions the agent took since then that a restore does NOT undo (${acts.count}):`);
    for (const a of acts.items.slice(0, 10)) lines.push(`    ${a.time ?? '?'}  ${oneLine(a.message ?? '', 120)}`);
    if (acts.count > 10) lines.push(`    … and ${acts.count - 10} more`);
    lines.push('  Snapshots do not undo the outside world: messages stay sent, pushes stay pushed.');
  }
  for (const w of p.warnings) lines.push(`  warning: ${w}`);
  return lines.join('\n');
}
