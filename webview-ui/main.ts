/**
 * The "Restore point details" webview (bundled to out/webview.js, browser IIFE). Renders what the
 * extension sends (webview-ui/messages.ts) with DOM APIs only (no innerHTML of data), themed by VS
 * Code's CSS variables; buttons are native <button>/<select>, so they are keyboard accessible.
 */
import type { ActionMessage, ShowMessage } from './messages';
import type { ChangeSummary, Scope } from '../sidecar/protocol';
import { formatBytes } from '../sidecar/protocol/format';

interface VsCodeApi {
  postMessage(msg: ActionMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const app = document.getElementById('app') as HTMLElement;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<Record<'className' | 'textContent' | 'id' | 'title', string>> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  for (const c of children) e.append(c);
  return e;
}

/** Render `a `code` b` as text with <code> spans. */
function richText(s: string): DocumentFragment {
  const f = document.createDocumentFragment();
  s.split('`').forEach((part, i) =>
    f.append(i % 2 ? el('code', { textContent: part }) : document.createTextNode(part)),
  );
  return f;
}

function list(title: string, items: string[], max = 50): HTMLElement {
  const section = el('section');
  section.append(el('h3', { textContent: `${title} (${items.length})` }));
  const ul = el('ul');
  for (const p of items.slice(0, max)) ul.append(el('li', { textContent: p }));
  if (items.length > max) ul.append(el('li', { className: 'note', textContent: `… and ${items.length - max} more` }));
  section.append(ul);
  return section;
}

function changesView(c: ChangeSummary): HTMLElement {
  const box = el('div');
  const none = !c.added.length && !c.removed.length && !c.changed.length && !c.agentChanged.length;
  if (none) {
    box.append(el('p', { className: 'sub', textContent: 'Nothing changed since this restore point.' }));
    return box;
  }
  if (c.added.length) box.append(list('Created since (a restore removes them)', c.added));
  if (c.changed.length) box.append(list('Changed since (a restore reverts them)', c.changed));
  if (c.removed.length) box.append(list('Deleted since (a restore brings them back)', c.removed));
  if (c.agentChanged.length) box.append(list('Agent state changed since', c.agentChanged));
  return box;
}

function render(m: ShowMessage): void {
  const rp = m.rp;
  app.replaceChildren();
  const h1 = el('h1', { textContent: m.title });
  h1.append(el('span', { className: 'badge', textContent: rp.status }));
  app.append(h1);
  app.append(
    el('p', { className: 'sub', textContent: `${new Date(rp.createdAt).toLocaleString()} · ${m.age} · ${rp.kind}` }),
  );

  const actions = el('div', { className: 'actions' });
  const scope = el('select', { id: 'scope', title: 'What to restore' });
  scope.setAttribute('aria-label', 'Restore scope');
  for (const [value, label] of [
    ['both', 'Machine + agent state'],
    ['machine', 'Machine only (keep current memory)'],
    ['agent', 'Agent state only'],
  ] as const) {
    const o = el('option', { textContent: label });
    o.value = value;
    scope.append(o);
  }
  const restore = el('button', { textContent: 'Restore…' });
  restore.addEventListener('click', () => vscode.postMessage({ type: 'restore', scope: scope.value as Scope }));
  const keep = el('button', { className: 'secondary', textContent: 'Keep' });
  keep.title = 'Record that the change after this restore point is kept';
  keep.addEventListener('click', () => vscode.postMessage({ type: 'keep' }));
  const del = el('button', { className: 'secondary', textContent: 'Delete…' });
  del.addEventListener('click', () => vscode.postMessage({ type: 'delete' }));
  for (const b of [restore, keep, del, scope]) b.disabled = !m.trusted;
  keep.disabled = !m.trusted || rp.status === 'kept';
  actions.append(scope, restore, keep, del);
  if (!m.trusted)
    actions.append(el('span', { className: 'note', textContent: 'Trust this workspace to restore, keep or delete.' }));
  app.append(actions);

  if (m.withoutPost) {
    const warn = el('p', { className: 'warning' });
    warn.append(el('strong', { textContent: 'No post restore point. ' }), richText(m.withoutPost));
    app.append(warn);
  }

  app.append(el('h2', { textContent: 'Reason' }));
  app.append(
    el('p', {}, m.reason ? richText(m.reason) : el('span', { className: 'sub', textContent: 'No reason recorded.' })),
  );
  if (m.origin) app.append(el('p', { className: 'sub' }, 'Taken by ', richText(m.origin.who), '.'));

  app.append(el('h2', { textContent: 'Machine snapshot' }));
  const dl = el('dl');
  const row = (k: string, v: string) => dl.append(el('dt', { textContent: k }), el('dd', { textContent: v }));
  row('Target', rp.target);
  row('Backend', rp.machine.backend);
  row('Entries', rp.machine.files.toLocaleString());
  row('Size', formatBytes(rp.machine.bytes));
  row('Newly stored', `${formatBytes(rp.machine.newBytes)} (the rest was deduplicated)`);
  row('Took', `${Math.round(rp.machine.durationMs).toLocaleString()} ms`);
  row('Id', rp.id);
  app.append(dl);

  app.append(el('h2', { textContent: 'Agent state' }));
  if (!rp.agent.length) app.append(el('p', { className: 'sub', textContent: 'No memory store was captured.' }));
  for (const cap of rp.agent) {
    app.append(
      list(
        cap.store,
        cap.files.map((f) => `${f.path} · ${formatBytes(f.size)}`),
      ),
    );
  }

  app.append(el('h2', { textContent: 'Changes since' }));
  if (m.changes) app.append(changesView(m.changes));
  else app.append(el('p', { className: 'error', textContent: m.diffError ?? 'Could not compute the changes.' }));
  app.append(
    el('p', {
      className: 'note',
      textContent:
        'Snapshots do not undo what the agent did outside this machine (emails sent, issues opened, payments).',
    }),
  );
}

window.addEventListener('message', (e: MessageEvent<ShowMessage>) => {
  if (e.data?.type === 'show') render(e.data);
});
vscode.postMessage({ type: 'ready' });
