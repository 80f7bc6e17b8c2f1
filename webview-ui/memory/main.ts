/**
 * The memory inspector webview (bundled to out/memory.js, browser IIFE). Renders what the extension
 * sends (webview-ui/memory/messages.ts) with DOM APIs only (no innerHTML of data) and
 * @vscode-elements/elements components, themed by VS Code's CSS variables. Keyboard: the entry list
 * is a listbox of buttons (Tab to reach it, Up/Down/Home/End to move, Enter to open); the search field
 * takes "/" as a shortcut.
 */
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-option/index.js';
import type { LintFinding, MemoryFile, MemoryWrite } from '../../sidecar/protocol';
import {
  areaOf,
  basename,
  brokenText,
  buildRows,
  emptyListText,
  fileMeta,
  fileWarnings,
  firstLine,
  provenanceUnavailable,
  readableMessage,
  rowMatches,
  storeName,
  storeTitle,
  timelineRows,
  timelineSpan,
  when,
  writeWho,
  writeBlockReason,
  type Filter,
  type Row,
} from './logic';
import type { DetailMessage, FromInspector, StateMessage, ToInspector } from './messages';

interface VsCodeApi {
  postMessage(msg: FromInspector): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const app = document.getElementById('app') as HTMLElement;

type Props = Partial<Record<'className' | 'textContent' | 'id' | 'title' | 'role', string>>;
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  for (const c of children) e.append(c);
  return e;
}

/** A vscode-elements component (custom element) with attributes. */
function vsc(
  tag: string,
  attrs: Record<string, string | boolean> = {},
  ...children: (Node | string)[]
): HTMLElement & { value: string; disabled: boolean } {
  const e = document.createElement(tag) as HTMLElement & { value: string; disabled: boolean };
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) e.append(c);
  return e;
}

let state: StateMessage | undefined;
let detail: DetailMessage | undefined;
let selected: { store: string; id: string } | undefined;
let notice: { text: string; severity: string } | undefined;
let editing = false;
/** The text being edited (kept across re-renders, e.g. when the agent changes another file meanwhile). */
let draft: string | undefined;
const filter: Filter = { text: '', store: '', area: '', finding: '' };
/** Which view the inspector shows: the entry list or the Timeline (writes over time). */
let view: 'list' | 'timeline' = 'list';
/** The write shown in the Timeline's detail pane (MemoryWrite.id + store). */
let pickedWrite: { store: string; id: string } | undefined;

function rows(): Row[] {
  return state ? buildRows(state.stores, state.findings) : [];
}

function matches(r: Row): boolean {
  return rowMatches(r, filter);
}

function select(
  label: string,
  value: string,
  options: Array<[string, string]>,
  onChange: (v: string) => void,
): HTMLElement {
  const s = vsc('vscode-single-select', { 'aria-label': label });
  for (const [v, text] of options)
    s.append(vsc('vscode-option', { value: v, ...(v === value ? { selected: true } : {}) }, text));
  s.addEventListener('change', () => onChange(s.value));
  return el('label', {}, label, s);
}

function toolbar(): HTMLElement {
  const bar = el('div', { className: 'toolbar', role: 'search' });
  const search = vsc('vscode-textfield', {
    placeholder: 'Search entries (press / )',
    'aria-label': 'Search memory entries',
    type: 'search',
    value: filter.text,
  });
  search.value = filter.text;
  search.id = 'search';
  search.addEventListener('input', () => {
    filter.text = search.value;
    renderList();
  });
  bar.append(el('label', {}, 'Search', search));
  const stores = state?.stores ?? [];
  const storeOptions = stores.map((s): [string, string] => [s.store, storeName(s)]);
  const pickStore = (v: string): void => ((filter.store = v), renderList());
  bar.append(select('Store', filter.store, [['', 'All stores'], ...storeOptions], pickStore));
  const areas = [...new Set(rows().map((r) => areaOf(r.file, r.entry)))].sort();
  bar.append(
    select(
      'Area',
      filter.area,
      [['', 'All areas'], ...areas.map((a): [string, string] => [a, a])],
      (v) => ((filter.area = v), renderList()),
    ),
  );
  const kinds = [...new Set(state?.findings.map((f) => f.kind) ?? [])].sort();
  bar.append(
    select(
      'Finding',
      filter.finding,
      [['', 'Any'], ['*', 'Any finding'], ...kinds.map((k): [string, string] => [k, k])],
      (v) => ((filter.finding = v), renderList()),
    ),
  );
  const toggle = vsc('vscode-button', { secondary: true }, view === 'list' ? 'Timeline' : 'Entries');
  toggle.title = view === 'list' ? 'Every write to the memory over time' : 'Back to the entry list';
  toggle.id = 'view-toggle';
  toggle.addEventListener('click', () => {
    view = view === 'list' ? 'timeline' : 'list';
    render();
  });
  bar.append(toggle);
  const fix = vsc(
    'vscode-button',
    { secondary: true, disabled: !state?.trusted || !state?.findings.length },
    'Fix findings…',
  );
  fix.title = 'Propose one edit set from the findings (merge duplicates, drop superseded) and show it as a diff';
  fix.addEventListener('click', () => vscode.postMessage({ type: 'lintFix' }));
  bar.append(fix);
  const refresh = vsc('vscode-button', { secondary: true }, 'Refresh');
  refresh.addEventListener('click', () => vscode.postMessage({ type: 'refresh' }));
  bar.append(refresh);
  return bar;
}

function usageBar(f: MemoryFile): HTMLElement | undefined {
  const u = f.usage;
  if (!u) return undefined;
  const pct = u.limit > 0 ? (u.chars / u.limit) * 100 : 0;
  const bar = el('div', {
    className: `bar${pct > 100 ? ' over' : pct >= 80 ? ' high' : ''}`,
    role: 'meter',
    title: `${u.chars} of ${u.limit} characters`,
  });
  bar.setAttribute('aria-valuemin', '0');
  bar.setAttribute('aria-valuemax', String(u.limit));
  bar.setAttribute('aria-valuenow', String(u.chars));
  bar.setAttribute('aria-label', `${basename(f.file)} usage`);
  const fill = el('div');
  fill.style.width = `${Math.min(100, pct)}%`;
  bar.append(fill);
  return bar;
}

function kindBadge(f: Pick<LintFinding, 'kind' | 'severity'>): HTMLElement {
  return el('span', { className: `kind ${f.severity}`, textContent: f.kind, title: `${f.severity}: ${f.kind}` });
}

let listEl: HTMLElement | undefined;
let detailEl: HTMLElement | undefined;

function renderList(): void {
  if (!listEl || !state) return;
  listEl.replaceChildren();
  const all = rows();
  const shown = all.filter(matches);
  const byFile = new Map<string, Row[]>();
  for (const r of shown)
    byFile.set(`${r.store}\u0000${r.file.file}`, [...(byFile.get(`${r.store}\u0000${r.file.file}`) ?? []), r]);
  for (const s of state.stores) {
    if (s.error && (!filter.store || filter.store === s.store)) {
      const name = el('div', { className: 'name', textContent: storeName(s), title: storeTitle(s) });
      listEl.append(el('div', { className: 'file' }, name, el('div', { className: 'error', textContent: s.error })));
    }
    for (const f of s.files) {
      const rs = byFile.get(`${s.store}\u0000${f.file}`);
      // a broken file is always shown (unless its store is filtered out): what is broken, the fix
      if (!rs && !(f.broken && (!filter.store || filter.store === s.store))) continue;
      const head = el('div', { className: f.broken ? 'file broken' : 'file' });
      head.append(
        el('div', { className: 'name', textContent: basename(f.file), title: f.file }),
        el('div', { className: 'meta', textContent: `${storeName(s)} · ${fileMeta(f)}`, title: storeTitle(s) }),
      );
      const broken = brokenText(f);
      if (broken) {
        head.append(el('div', { className: 'error', role: 'alert', textContent: broken.problem }));
        if (broken.fix) head.append(el('div', { className: 'note', textContent: broken.fix }));
      } else {
        const bar = usageBar(f);
        if (bar) head.append(bar);
      }
      for (const w of fileWarnings(f)) head.append(el('div', { className: 'note', textContent: `⚠ ${w}` }));
      listEl.append(head);
      for (const r of rs ?? []) listEl.append(entryButton(r));
    }
  }
  if (!shown.length) {
    listEl.append(el('div', { className: 'empty', textContent: emptyListText(state.stores, all.length) }));
  }
  report(all.length, shown.length);
}

function entryButton(r: Row): HTMLElement {
  const b = el('button', { className: 'entry', role: 'option' });
  const sel = selected?.store === r.store && selected.id === r.entry.id;
  b.setAttribute('aria-selected', String(sel));
  b.dataset.id = r.entry.id;
  b.dataset.store = r.store;
  b.tabIndex = sel ? 0 : -1;
  const meta = el('span', { className: 'meta' });
  for (const f of r.findings) meta.append(kindBadge(f));
  meta.append(
    `${r.entry.text.length} chars · ${areaOf(r.file, r.entry)}${(r.entry.updatedAt ?? r.entry.createdAt) ? ` · ${(r.entry.updatedAt ?? r.entry.createdAt)!.slice(0, 10)}` : ''}`,
  );
  b.append(el('span', { className: 'text', textContent: firstLine(r.entry.text) }), meta);
  b.title = r.findings.map((f) => `${f.kind}: ${f.message}`).join('\n') || firstLine(r.entry.text, 400);
  b.addEventListener('click', () => choose(r.store, r.entry.id));
  return b;
}

function choose(store: string, id: string): void {
  selected = { store, id };
  draft = undefined;
  if (notice) {
    notice = undefined;
    app.querySelector('.banner[role="alert"]')?.remove();
  }
  editing = false;
  detail = undefined;
  vscode.postMessage({ type: 'select', store, id });
  renderList();
  renderDetail();
  (listEl?.querySelector(`button.entry[aria-selected="true"]`) as HTMLElement | null)?.focus();
}

function section(title: string, ...children: (Node | string)[]): HTMLElement {
  return el('section', {}, el('h3', { textContent: title }), ...children);
}

function renderDetail(): void {
  if (!detailEl || !state) return;
  detailEl.replaceChildren();
  if (!selected) {
    detailEl.append(
      el('p', {
        className: 'empty',
        textContent: 'Select an entry to see its full text, findings and where it came from.',
      }),
    );
    return report();
  }
  const row = rows().find((r) => r.store === selected!.store && r.entry.id === selected!.id);
  if (!row) {
    detailEl.append(
      el('p', {
        className: 'empty',
        textContent: 'This entry is no longer in the store (the agent or an edit changed it).',
      }),
    );
    return report();
  }
  const show = detail && detail.store === row.store && detail.id === row.entry.id ? detail.show : undefined;
  const index = row.file.entries.findIndex((e) => e.id === row.entry.id);
  detailEl.append(
    el('h2', { textContent: `${basename(row.file.file)} · entry ${index + 1} of ${row.file.entries.length}` }),
  );
  if (editing && show) {
    const ta = vsc('vscode-textarea', { rows: '8', 'aria-label': 'New text of the memory entry', resize: 'vertical' });
    ta.value = draft ?? show.entry.text;
    ta.addEventListener('input', () => (draft = ta.value));
    const save = vsc('vscode-button', {}, 'Save');
    const cancel = vsc('vscode-button', { secondary: true }, 'Cancel');
    save.addEventListener('click', () => {
      editing = false;
      draft = undefined;
      vscode.postMessage({
        type: 'edit',
        store: row.store,
        id: row.entry.id,
        text: ta.value,
        expectedHash: show.contentHash,
      });
    });
    const stop = () => {
      editing = false;
      draft = undefined;
      renderDetail();
    };
    cancel.addEventListener('click', stop);
    ta.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') stop();
    });
    detailEl.append(
      ta,
      el('div', { className: 'actions' }, save, cancel),
      el('p', {
        className: 'note',
        textContent:
          'Saving checks that the file did not change since it was read; if the agent wrote in between, nothing is saved and the inspector reloads.',
      }),
    );
    if (draft === undefined) setTimeout(() => (ta as HTMLElement).focus(), 0);
  } else {
    detailEl.append(el('pre', { className: 'text', textContent: row.entry.text }));
    detailEl.append(actions(row, show));
  }

  const fs = row.findings;
  const fsec = section(`Findings (${fs.length})`);
  if (!fs.length)
    fsec.append(el('p', { className: 'note', textContent: state.lintNote ?? 'Lint found nothing about this entry.' }));
  for (const f of fs) {
    const box = el('div', { className: `finding ${f.severity}` }, kindBadge(f), el('span', { textContent: f.message }));
    if (f.evidence?.length) box.append(el('ul', {}, ...f.evidence.map((ev) => el('li', { textContent: ev }))));
    if (f.suggestion) box.append(el('p', { className: 'note', textContent: `Suggestion: ${f.suggestion}` }));
    fsec.append(box);
  }
  detailEl.append(fsec);

  const psec = section('Provenance');
  if (!show)
    psec.append(
      el('p', {
        className: detail?.error ? 'error' : 'note',
        textContent: detail?.error ?? 'Loading where this entry came from…',
      }),
    );
  else {
    const traces = show.provenance.traces;
    const unavailable = provenanceUnavailable(show.provenance);
    // a history that cannot be read: where the entry came from is unknown, not "no trace"
    if (unavailable) psec.append(el('p', { className: 'error', role: 'alert', textContent: unavailable }));
    else if (!traces.length) {
      const note = show.provenance.note ?? 'No trace of where this entry came from.';
      psec.append(el('p', { className: 'note', textContent: note }));
    }
    traces.forEach((t, i) => {
      const box = el('div', { className: 'trace' });
      box.append(
        el('div', { className: 'head', textContent: `${t.action} · ${t.time ? when(t.time) : 'time unknown'}` }),
      );
      box.append(
        el('div', {
          className: 'note',
          textContent: `Session ${t.session ?? 'unknown'} · source ${t.source ?? 'unknown'}${t.messageId !== undefined ? ` · message ${t.messageId}` : ''}`,
        }),
      );
      if (t.message) box.append(el('pre', { className: 'text', textContent: readableMessage(t.message) }));
      if (t.previous) box.append(el('div', { className: 'note', textContent: `Before: ${t.previous}` }));
      const open = vsc('vscode-button', { secondary: true }, 'Open session messages');
      open.addEventListener('click', () =>
        vscode.postMessage({ type: 'openSession', store: row.store, id: row.entry.id, trace: i }),
      );
      box.append(el('div', { className: 'actions' }, open));
      psec.append(box);
    });
    if (traces.length && show.provenance.note && !unavailable) {
      psec.append(el('p', { className: 'note', textContent: show.provenance.note }));
    }
  }
  detailEl.append(psec);
  const dl = el('dl');
  const add = (k: string, v: string | undefined) =>
    v && dl.append(el('dt', { textContent: k }), el('dd', { textContent: v }));
  add('Store', row.store);
  add('File', row.file.file);
  add('Area', areaOf(row.file, row.entry));
  add('Id', row.entry.id);
  add('Length', `${row.entry.text.length} characters`);
  const b = row.file.broken;
  if (b) add('Broken', `${b.message}${b.hint ? ` Fix: ${b.hint}` : ''}`);
  if (row.file.usage && !row.file.broken)
    add(
      'File usage',
      `${row.file.usage.chars} of ${row.file.usage.limit} characters (${Math.round((row.file.usage.chars / Math.max(1, row.file.usage.limit)) * 100)}%)`,
    );
  add('Created', row.entry.createdAt && when(row.entry.createdAt));
  add('Updated', row.entry.updatedAt && when(row.entry.updatedAt));
  add('Source', row.entry.source);
  for (const [k, v] of Object.entries(row.entry.meta ?? {})) add(k, typeof v === 'string' ? v : JSON.stringify(v));
  detailEl.append(section('Metadata', dl));
  report();
}

/** Why this entry cannot be changed here (untrusted, broken file, read-only), or undefined when it can. */
function readOnlyReason(row: Row): string | undefined {
  return writeBlockReason(row.file, !!state?.trusted);
}

function actions(row: Row, show: DetailMessage['show']): HTMLElement {
  const box = el('div', { className: 'actions' });
  const ro = readOnlyReason(row);
  const edit = vsc('vscode-button', { disabled: !!ro || !show }, 'Edit');
  const del = vsc('vscode-button', { secondary: true, disabled: !!ro || !show }, 'Delete…');
  const diff = vsc(
    'vscode-button',
    { secondary: true, disabled: !state?.restorePoints },
    'Diff against restore point…',
  );
  if (!state?.restorePoints) diff.title = "No restore point captured this agent's memory yet.";
  edit.addEventListener('click', () => ((editing = true), renderDetail()));
  del.addEventListener('click', () =>
    vscode.postMessage({ type: 'delete', store: row.store, id: row.entry.id, expectedHash: show?.contentHash }),
  );
  diff.addEventListener('click', () => vscode.postMessage({ type: 'diff', store: row.store }));
  box.append(edit, del, diff);
  const wrap = el('div', {}, box);
  if (ro) wrap.append(el('p', { className: 'note', textContent: ro }));
  return wrap;
}

function report(total = rows().length, shown = listEl?.querySelectorAll('button.entry').length ?? 0): void {
  const show = detail && selected && detail.id === selected.id ? detail.show : undefined;
  vscode.postMessage({
    type: 'rendered',
    entries: total,
    shown,
    detail: selected?.id,
    traces: show?.provenance.traces.length,
    findings: state?.findings.length ?? 0,
    readOnlyNote: state && !state.trusted ? 'untrusted' : undefined,
    broken: listEl?.querySelectorAll('.file.broken').length ?? 0,
    provenanceUnavailable: show ? provenanceUnavailable(show.provenance) : undefined,
  });
}

function render(): void {
  if (!state) return;
  const searching = document.activeElement?.id === 'search';
  app.replaceChildren();
  const total = rows().length;
  const withFindings = rows().filter((r) => r.findings.length).length;
  app.append(el('h1', { textContent: 'Agent memory' }));
  app.append(
    el('p', {
      className: 'sub',
      textContent: `${total} ${total === 1 ? 'entry' : 'entries'} in ${state.stores.length} ${state.stores.length === 1 ? 'store' : 'stores'} · ${state.findings.length} findings on ${withFindings} entries`,
    }),
  );
  if (!state.trusted)
    app.append(
      el('div', {
        className: 'banner warning',
        textContent: 'Restricted Mode: read-only. Editing and deleting memory need a trusted workspace.',
      }),
    );
  if (state.lintNote) app.append(el('p', { className: 'note', textContent: state.lintNote }));
  if (notice)
    app.append(el('div', { className: `banner ${notice.severity}`, role: 'alert', textContent: notice.text }));
  app.append(toolbar());
  if (view === 'timeline') {
    renderTimeline();
    if (searching) (document.getElementById('search') as HTMLElement | null)?.focus();
    return;
  }
  listEl = el('div', { className: 'list', role: 'listbox' });
  listEl.setAttribute('aria-label', 'Memory entries');
  listEl.addEventListener('keydown', onListKey);
  detailEl = el('div', { className: 'detail', role: 'region' });
  detailEl.setAttribute('aria-label', 'Entry detail');
  app.append(el('div', { className: 'layout' }, listEl, detailEl));
  renderList();
  if (listEl && !listEl.querySelector('button.entry[tabindex="0"]')) {
    const first = listEl.querySelector('button.entry') as HTMLElement | null;
    if (first) first.tabIndex = 0;
  }
  renderDetail();
  if (searching) (document.getElementById('search') as HTMLElement | null)?.focus();
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag: string, attrs: Record<string, string | number> = {}): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** Mark colour class per source; shape per action (add: circle, replace: diamond, remove: cross). */
function markFor(w: MemoryWrite, x: number, y: number): SVGElement {
  const g = svg('g', { class: `mark ${w.source}${w.refused ? ' refused' : ''}`, tabindex: 0, role: 'button' });
  if (w.action === 'add') g.append(svg('circle', { cx: x, cy: y, r: 6 }));
  else if (w.action === 'replace')
    g.append(svg('path', { d: `M${x} ${y - 7} L${x + 7} ${y} L${x} ${y + 7} L${x - 7} ${y} Z` }));
  else
    g.append(
      svg('path', { d: `M${x - 5} ${y - 5} L${x + 5} ${y + 5} M${x + 5} ${y - 5} L${x - 5} ${y + 5}`, class: 'cross' }),
    );
  const title = svg('title');
  title.textContent = `${w.action} · ${w.time ? when(w.time) : 'time unknown'} · ${writeWho(w)}`;
  g.append(title);
  g.setAttribute('aria-label', title.textContent);
  g.dataset.write = w.id;
  return g;
}

/**
 * The Timeline view: one row per entry (through its edits), time left to right, one mark per write
 * (colour: who wrote it; shape: add, replace, remove). A click on a mark shows the write with its
 * text before and after, and Undo.
 */
function renderTimeline(): void {
  if (!state) return;
  const all = (state.history ?? []).filter(
    (w) =>
      (!filter.store || w.store === filter.store) &&
      (!filter.text || `${w.before ?? ''}\n${w.after ?? ''}`.toLowerCase().includes(filter.text.toLowerCase())),
  );
  const trows = timelineRows(all);
  const wrap = el('div', { className: 'timeline-wrap' });
  if (state.historyNote) wrap.append(el('p', { className: 'note', textContent: `⚠ ${state.historyNote}` }));
  const legend = el('div', { className: 'legend' });
  for (const [cls, text] of [
    ['agent', "agent's memory tool"],
    ['hook', 'seen by the hook'],
    ['agentkeep', 'AgentKeep'],
    ['restore-point', 'between restore points'],
  ])
    legend.append(el('span', { className: `key ${cls}`, textContent: text }));
  legend.append(el('span', { className: 'note', textContent: ' ● add  ◆ replace  ✕ remove' }));
  wrap.append(legend);
  const chart = el('div', { className: 'timeline', role: 'group' });
  chart.setAttribute('aria-label', 'Memory writes over time');
  const side = el('div', { className: 'detail', role: 'region' });
  side.setAttribute('aria-label', 'Write detail');
  if (!trows.length)
    chart.append(el('p', { className: 'empty', textContent: 'No writes recorded for these stores yet.' }));
  else {
    const { start, end } = timelineSpan(all);
    const labelW = 230;
    const W = 520;
    const rowH = 26;
    const top = 26;
    const H = top + trows.length * rowH + 8;
    // scales to the pane (text included) so the whole time span is always in view
    const s = svg('svg', {
      width: '100%',
      viewBox: `0 0 ${labelW + W + 10} ${H}`,
      preserveAspectRatio: 'xMinYMin meet',
    });
    const xOf = (t?: string): number =>
      t ? labelW + 12 + ((Date.parse(t) - start) / Math.max(1, end - start)) * (W - 24) : labelW + 12;
    // time axis: 5 ticks
    for (let i = 0; i <= 4; i++) {
      const t = start + ((end - start) * i) / 4;
      const x = labelW + 12 + ((W - 24) * i) / 4;
      s.append(svg('line', { x1: x, y1: top - 6, x2: x, y2: H, class: 'tick' }));
      const lab = svg('text', {
        x,
        y: top - 10,
        class: 'axis',
        'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle',
      });
      // a day apart or more: the date; within a day: the time (UTC)
      const iso = new Date(t).toISOString();
      lab.textContent = !start ? '' : end - start >= 86_400_000 ? iso.slice(0, 10) : `${iso.slice(11, 16)} UTC`;
      s.append(lab);
    }
    trows.forEach((r, i) => {
      const y = top + i * rowH + rowH / 2;
      if (i % 2) s.append(svg('rect', { x: 0, y: y - rowH / 2, width: labelW + W + 10, height: rowH, class: 'band' }));
      const text = svg('text', { x: 4, y: y + 4, class: `label${r.gone ? ' gone' : ''}` });
      const l = firstLine(r.label, 38);
      text.textContent = r.gone ? `${l} (removed)` : l;
      const tt = svg('title');
      tt.textContent = r.label;
      text.append(tt);
      s.append(text);
      const xs = r.writes.map((w) => xOf(w.time));
      if (xs.length > 1)
        s.append(svg('line', { x1: Math.min(...xs), y1: y, x2: Math.max(...xs), y2: y, class: 'life' }));
      for (const w of r.writes) {
        const m = markFor(w, xOf(w.time), y);
        if (pickedWrite?.id === w.id && pickedWrite.store === w.store) m.classList.add('picked');
        const pick = (): void => {
          pickedWrite = { store: w.store, id: w.id };
          render();
        };
        m.addEventListener('click', pick);
        m.addEventListener('keydown', (ev) => {
          if ((ev as KeyboardEvent).key === 'Enter' || (ev as KeyboardEvent).key === ' ') pick();
        });
        s.append(m);
      }
    });
    chart.append(s);
    const written = new Set(trows.filter((r) => !r.gone).map((r) => r.label));
    const quiet = rows().filter((r) => !written.has(r.entry.text)).length;
    if (quiet)
      chart.append(
        el('p', {
          className: 'note',
          textContent: `${quiet} ${quiet === 1 ? 'entry has' : 'entries have'} no recorded write (written before the history began, or by hand before the first restore point).`,
        }),
      );
  }
  const w = all.find((x) => pickedWrite && x.id === pickedWrite.id && x.store === pickedWrite.store);
  if (!w)
    side.append(
      el('p', {
        className: 'empty',
        textContent: 'Click a mark to see the write: who made it, the text before and after.',
      }),
    );
  else {
    side.append(el('h2', { textContent: `${w.action} · ${w.time ? when(w.time) : 'time unknown'}` }));
    side.append(
      el('p', {
        className: 'note',
        textContent: `By ${writeWho(w)}${w.refused ? ' — refused by the tool, nothing written' : ''}`,
      }),
    );
    if (w.before !== undefined)
      side.append(section('Before'), el('pre', { className: 'text before', textContent: w.before }));
    else if (w.oldText !== undefined)
      side.append(
        section('Before'),
        el('p', { className: 'note', textContent: `Only the tool's old_text is known: "${w.oldText}"` }),
      );
    if (w.after !== undefined)
      side.append(section('After'), el('pre', { className: 'text after', textContent: w.after }));
    const dl = el('dl');
    const add = (k: string, v: string | undefined): void => {
      if (v) dl.append(el('dt', { textContent: k }), el('dd', { textContent: v }));
    };
    add('Write', w.id);
    add('Store', w.store);
    add('File', w.file);
    add('Session', w.session);
    add('Tool call', w.toolCallId);
    add('Restore point', w.restorePoint);
    add('Group', w.group);
    add('Undo of', w.undoOf);
    side.append(section('Details', dl));
    const undo = vsc('vscode-button', { disabled: !state.trusted || !!w.refused }, 'Undo this write');
    undo.title = 'Put the entry back as it was before this write (refused when it changed since)';
    undo.addEventListener('click', () => vscode.postMessage({ type: 'undoWrite', store: w.store, write: w.id }));
    side.append(el('div', { className: 'actions' }, undo));
  }
  wrap.append(el('div', { className: 'layout timeline-layout' }, chart, side));
  app.append(wrap);
  vscode.postMessage({
    type: 'rendered',
    entries: rows().length,
    shown: 0,
    findings: state.findings.length,
    timeline: {
      rows: trows.length,
      marks: trows.reduce((n, r) => n + r.writes.length, 0),
      ...(w ? { write: w.id } : {}),
    },
  });
}

function onListKey(ev: KeyboardEvent): void {
  const buttons = listEl ? Array.from(listEl.querySelectorAll<HTMLButtonElement>('button.entry')) : [];
  const i = buttons.indexOf(document.activeElement as HTMLButtonElement);
  let next = -1;
  if (ev.key === 'ArrowDown') next = Math.min(buttons.length - 1, i + 1);
  else if (ev.key === 'ArrowUp') next = Math.max(0, i - 1);
  else if (ev.key === 'Home') next = 0;
  else if (ev.key === 'End') next = buttons.length - 1;
  else return;
  ev.preventDefault();
  const b = buttons[next];
  if (!b) return;
  for (const x of buttons) x.tabIndex = -1;
  b.tabIndex = 0;
  b.focus();
}

document.addEventListener('keydown', (ev) => {
  if (ev.key === '/' && !(ev.target instanceof HTMLElement && /TEXTAREA|INPUT|VSCODE-TEXT/.test(ev.target.tagName))) {
    ev.preventDefault();
    (document.getElementById('search') as HTMLElement | null)?.focus();
  }
});

window.addEventListener('message', (ev: MessageEvent<ToInspector>) => {
  const m = ev.data;
  switch (m.type) {
    case 'state':
      state = m;
      if (m.select) selected = m.select;
      else if (selected && !rows().some((r) => r.store === selected!.store && r.entry.id === selected!.id))
        selected = undefined;
      render();
      break;
    case 'detail':
      if (selected && m.store === selected.store && m.id === selected.id) {
        detail = m;
        renderDetail();
      }
      break;
    case 'notice':
      notice = { text: m.text, severity: m.severity };
      render();
      break;
    case 'view':
      view = m.view;
      if (m.write) pickedWrite = m.write;
      render();
      break;
  }
});

vscode.postMessage({ type: 'ready' });
