/**
 * The memory inspector's list logic and text formatting (webview-ui/memory/logic.ts): rows across
 * stores with their findings, search and filters, tool-call arguments and times made readable.
 */
import * as assert from 'node:assert/strict';
import type { LintFinding, MemoryFile } from '../../sidecar/protocol';
import { describeStore } from '../../sidecar/memory';
import {
  areaOf,
  buildRows,
  firstLine,
  readableMessage,
  rowMatches,
  storeName,
  when,
  type Filter,
  timelineRows,
  timelineSpan,
} from '../../webview-ui/memory/logic';

const hermes = 'hermes:/home/sam/agent-home/.hermes';
const zero = 'agent-zero:/srv/a0';
const memFile: MemoryFile = {
  kind: 'hermes-memory',
  file: '/home/sam/agent-home/.hermes/memories/MEMORY.md',
  usage: { chars: 200, limit: 2200 },
  entries: [
    { id: 'aaaa11112222', text: 'The staging server is staging.example.internal; deploy with ./deploy.sh staging.' },
    { id: 'bbbb33334444', text: 'Node 20 is the runtime; npm is the package manager.' },
  ],
};
const userFile: MemoryFile = {
  kind: 'hermes-user',
  file: '/home/sam/agent-home/.hermes/memories/USER.md',
  entries: [{ id: 'cccc55556666', text: 'Name: Sam Rivera.\nWorks in UTC+1.' }],
};
const a0File: MemoryFile = {
  kind: 'agent-zero-main',
  file: '/srv/a0/usr/memory/default/index.pkl',
  entries: [{ id: 'Xk3P9aQ2mZ', text: 'SSH on port 2222.', area: 'solutions', source: 'knowledge' }],
};
const findings: LintFinding[] = [
  { kind: 'duplicate', severity: 'warning', entries: ['aaaa11112222', 'Xk3P9aQ2mZ'], message: 'Same fact twice.' },
  { kind: 'age', severity: 'info', entries: ['aaaa11112222'], message: 'Old.' },
];
const none: Filter = { text: '', store: '', area: '', finding: '' };

describe('memory inspector: list logic', () => {
  const rows = buildRows(
    [
      { store: hermes, files: [memFile, userFile] },
      { store: zero, files: [a0File] },
      { store: 'mem0:/broken', files: [], error: 'no history.db' },
    ],
    findings,
  );
  const ids = (f: Partial<Filter>) => rows.filter((r) => rowMatches(r, { ...none, ...f })).map((r) => r.entry.id);

  it('lists every entry in store and file order, each with the findings that name it', () => {
    assert.deepEqual(
      rows.map((r) => r.entry.id),
      ['aaaa11112222', 'bbbb33334444', 'cccc55556666', 'Xk3P9aQ2mZ'],
    );
    assert.deepEqual(
      rows[0]!.findings.map((f) => f.kind),
      ['duplicate', 'age'],
    );
    assert.deepEqual(rows[1]!.findings, []);
    assert.deepEqual(
      rows[3]!.findings.map((f) => f.kind),
      ['duplicate'],
    );
    assert.equal(rows[3]!.store, zero);
  });

  it('derives the area from the store (Agent Zero) or the Hermes file kind', () => {
    assert.equal(areaOf(memFile, memFile.entries[0]!), 'memory');
    assert.equal(areaOf(userFile, userFile.entries[0]!), 'user');
    assert.equal(areaOf(a0File, a0File.entries[0]!), 'solutions');
    // a kind the inspector has never heard of: the file kind's last part, no store kind named
    const other: MemoryFile = {
      kind: 'throwaway',
      file: 'throwaway://notes/memories',
      entries: [{ id: 'x1', text: 't' }],
    };
    assert.equal(areaOf(other, other.entries[0]!), 'throwaway');
  });

  it('filters by store, area and finding kind ("*" = any finding)', () => {
    assert.deepEqual(ids({}), ['aaaa11112222', 'bbbb33334444', 'cccc55556666', 'Xk3P9aQ2mZ']);
    assert.deepEqual(ids({ store: zero }), ['Xk3P9aQ2mZ']);
    assert.deepEqual(ids({ area: 'user' }), ['cccc55556666']);
    assert.deepEqual(ids({ finding: '*' }), ['aaaa11112222', 'Xk3P9aQ2mZ']);
    assert.deepEqual(ids({ finding: 'age' }), ['aaaa11112222']);
    assert.deepEqual(ids({ finding: 'contradiction' }), []);
    assert.deepEqual(ids({ store: hermes, finding: 'duplicate' }), ['aaaa11112222']);
  });

  it('searches every word, case-insensitively, in text, id, source and file path', () => {
    assert.deepEqual(ids({ text: 'STAGING deploy' }), ['aaaa11112222']);
    assert.deepEqual(ids({ text: 'staging nosuchword' }), []);
    assert.deepEqual(ids({ text: 'bbbb3333' }), ['bbbb33334444']);
    assert.deepEqual(ids({ text: 'knowledge' }), ['Xk3P9aQ2mZ']);
    assert.deepEqual(ids({ text: 'USER.md' }), ['cccc55556666']);
    assert.deepEqual(ids({ text: '   ' }), ['aaaa11112222', 'bbbb33334444', 'cccc55556666', 'Xk3P9aQ2mZ']);
  });
});

describe('memory inspector: text formatting', () => {
  it("shows a memory tool call's JSON arguments as lines, the content last", () => {
    const msg = JSON.stringify({ content: 'Staging SSH is on port 2222.', action: 'add', target: 'memory' });
    assert.equal(readableMessage(msg), 'action: add\ntarget: memory\ncontent: Staging SSH is on port 2222.');
    assert.equal(
      readableMessage(JSON.stringify({ action: 'replace', old_text: 'x', n: 2 })),
      'action: replace\nold_text: x\nn: 2',
    );
  });

  it('leaves other messages as they are (plain text, arrays, broken JSON)', () => {
    assert.equal(readableMessage('remember: port 2222'), 'remember: port 2222');
    assert.equal(readableMessage('[1,2]'), '[1,2]');
    assert.equal(readableMessage('{"action": "add"'), '{"action": "add"');
  });

  it('formats ISO times to the minute in UTC and leaves other strings alone', () => {
    assert.equal(when('2026-03-12T09:15:10.000Z'), '2026-03-12 09:15 UTC');
    assert.equal(when('yesterday'), 'yesterday');
  });

  it('names stores and cuts first lines', () => {
    // from the store's description (memory.list `descriptions`), never parsed from the string
    assert.equal(storeName({ store: hermes, description: describeStore(hermes) }), 'hermes · agent-home/.hermes');
    const a0 = 'agent-zero:/srv/a0/';
    assert.equal(storeName({ store: a0, description: describeStore(a0) }), 'agent-zero · srv/a0');
    assert.equal(storeName({ store: 'letta:agent-1' }), 'letta:agent-1', 'without a description: the string as given');
    assert.equal(firstLine('\n  Name: Sam Rivera.\nWorks in UTC+1.'), 'Name: Sam Rivera.');
    assert.equal(firstLine('x'.repeat(200), 10), `${'x'.repeat(9)}…`);
  });
});

describe('memory inspector: Timeline rows', () => {
  const w = (id: string, action: 'add' | 'replace' | 'remove', before?: string, after?: string, time?: string) => ({
    id,
    store: 'hermes:/h',
    source: 'agent' as const,
    action,
    ...(before !== undefined ? { before } : {}),
    ...(after !== undefined ? { after } : {}),
    ...(time ? { time } : {}),
  });
  it('one row per entry through its edits; a remove ends it; a new text gets a new row', () => {
    const rows = timelineRows([
      w('1', 'add', undefined, 'Port 2222', '2026-01-01T10:00:00Z'),
      w('2', 'add', undefined, 'Lives in Berlin', '2026-01-01T10:01:00Z'),
      w('3', 'replace', 'Port 2222', 'Port 2200', '2026-01-01T10:02:00Z'),
      w('4', 'remove', 'lives in  berlin', undefined, '2026-01-01T10:03:00Z'),
      w('5', 'replace', 'Port 2200', 'Port 22', '2026-01-01T10:04:00Z'),
    ]);
    assert.deepEqual(
      rows.map((r) => [r.label, r.writes.map((x) => x.id), r.gone]),
      [
        ['Port 22', ['1', '3', '5'], false],
        ['Lives in Berlin', ['2', '4'], true],
      ],
    );
    const span = timelineSpan([w('1', 'add', undefined, 'a', '2026-01-01T10:00:00Z')]);
    assert.ok(span.start < Date.parse('2026-01-01T10:00:00Z') && span.end > Date.parse('2026-01-01T10:00:00Z'));
  });
});
