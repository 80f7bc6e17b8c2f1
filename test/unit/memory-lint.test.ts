import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { lintEntries, type LintInput } from '../../sidecar/memory/lint';
import { candidatePairs, prepare } from '../../sidecar/memory/lint/pairs';
import { extractClaims, versionAgrees } from '../../sidecar/memory/lint/claims';
import { evaluate, loadCases, pr } from '../../sidecar/memory/lint/eval';
import { formatFindings } from '../../sidecar/memory/lint/format';
import { REPO } from './helpers/paths';

function mem(texts: string[], extra: Partial<LintInput> = {}): LintInput {
  return {
    stores: [
      {
        store: 'hermes:/h',
        files: [
          {
            kind: 'hermes-memory',
            file: '/h/memories/MEMORY.md',
            entries: texts.map((text, i) => ({ id: `e${i + 1}`, text })),
          },
        ],
      },
    ],
    ...extra,
  };
}

describe('memory lint (pure core)', () => {
  it('explains a contradiction with both entries, the reason and what is newer', () => {
    const f = lintEntries(mem(['The api service uses port 8080', 'The api service uses port 9090']));
    assert.equal(f.length, 1);
    assert.equal(f[0].kind, 'contradiction');
    assert.deepEqual(f[0].entries, ['e1', 'e2']);
    assert.match(f[0].message, /8080 vs 9090/);
    assert.match(f[0].message, /keeps no time/);
    assert.ok(f[0].evidence!.some((e) => e.includes('MEMORY.md #2')));
  });

  it('formats findings for the terminal', () => {
    assert.equal(formatFindings([]), 'No findings.');
    const text = formatFindings(lintEntries(mem(['User prefers tabs', 'User prefers spaces'])));
    assert.match(text, /^WARNING contradiction: Possible contradiction \(exclusive alternatives: "tab" vs "space"\)/);
    assert.match(text, /→ Keep the one that is true now/);
    assert.match(text, /1 finding: 0 error, 1 warning, 0 info\.$/);
  });

  it('orders a contradiction oldest first when the store keeps time', () => {
    const input: LintInput = {
      stores: [
        {
          store: 'mem0:/m',
          files: [
            {
              kind: 'mem0',
              file: '/m/s.sqlite',
              entries: [
                { id: 'new', text: 'I hate Chinese food', createdAt: '2026-03-02T00:00:00Z' },
                { id: 'old', text: 'I love Chinese food', createdAt: '2026-03-01T00:00:00Z' },
              ],
            },
          ],
        },
      ],
    };
    const [c] = lintEntries(input);
    assert.deepEqual(c.entries, ['old', 'new']);
    assert.match(c.message, /is newer \(2026-03-02 vs 2026-03-01\)/);
  });

  it('does not flag different subjects with the same value, or two dates', () => {
    assert.deepEqual(lintEntries(mem(['Alice uses Postgres', 'Bob uses Postgres'])), []);
    assert.deepEqual(lintEntries(mem(['Dentist appointment on 2026-01-05', 'Dentist appointment on 2026-02-10'])), []);
    assert.deepEqual(
      lintEntries(mem(['Staging server listens for SSH on port 2222', 'Production server listens for SSH on port 22'])),
      [],
    );
  });

  it('clusters near-duplicates across stores into one finding', () => {
    const input: LintInput = {
      stores: [
        {
          store: 'hermes:/h',
          files: [
            {
              kind: 'hermes-memory',
              file: '/h/memories/MEMORY.md',
              entries: [
                { id: 'a', text: 'User prefers dark mode in all editors' },
                { id: 'b', text: 'The user prefers dark mode in all editors.' },
              ],
            },
          ],
        },
        {
          store: 'agent-zero:/a0',
          files: [
            {
              kind: 'agent-zero-main',
              file: '/a0/usr/memory/default/index.pkl',
              entries: [{ id: 'c', text: 'User prefers dark mode across all editors' }],
            },
          ],
        },
      ],
    };
    const f = lintEntries(input);
    assert.equal(f.length, 1);
    assert.equal(f[0].kind, 'near-duplicate');
    assert.deepEqual([...f[0].entries].sort(), ['a', 'b', 'c']);
    assert.deepEqual(f[0].stores, ['hermes:/h', 'agent-zero:/a0']);
    assert.match(f[0].message, /across 2 stores/);
  });

  it('states what Hermes does with an over-budget file', () => {
    const texts = Array.from(
      { length: 30 },
      (_, i) => `Runbook step ${i}: rotate the logs of service number ${i} and check the disks of host h${i}`,
    );
    const input = mem(texts);
    const file = input.stores[0].files[0];
    file.usage = { chars: [...texts.join('\n§\n')].length, limit: 2200 };
    const f = lintEntries(input).filter((x) => x.kind === 'over-budget');
    assert.equal(f.length, 1);
    assert.equal(f[0].severity, 'error');
    assert.match(f[0].message, /refuses every new `memory add`/);
    assert.match(f[0].message, /ARCHIVE\.jsonl/);
    assert.match(f[0].message, /head\/tail-truncated/);
    assert.ok(f[0].entries.length > 0 && f[0].entries.length < texts.length, 'lists the entries in the cut middle');
  });

  it("finds the hand-appended paragraph Hermes's own drift guard misses (hermes-agent#26045)", () => {
    const raw =
      'Entry A: user prefers tabs\n§\nEntry B: staging port 2222\n\n## Appended by patch tool\n- deploy key lives in ~/.ssh/deploy_ed25519\n';
    const entries = raw.split('\n§\n').map((t, i) => ({ id: `e${i + 1}`, text: t.trim() }));
    const f = lintEntries({
      stores: [{ store: 'hermes:/h', files: [{ kind: 'hermes-memory', file: '/h/memories/MEMORY.md', raw, entries }] }],
    });
    const d = f.filter((x) => x.kind === 'drift');
    assert.equal(d.length, 1);
    assert.deepEqual(d[0].entries, ['e2']);
    assert.match(d[0].message, /does not notice/);
  });

  it('judges only probed claims, and versions by prefix', () => {
    assert.ok(versionAgrees('20', '20.19.2'));
    assert.ok(!versionAgrees('18', '20.1.0'));
    assert.deepEqual(extractClaims('Uses VS Code with Vim keybindings.'), []);
    const claims = extractClaims('Runs Node 18; key at ~/.ssh/id_ed25519; test with `pnpm test`');
    assert.deepEqual(claims.map((c) => `${c.kind}:${c.key}`).sort(), [
      'command:pnpm',
      'path:~/.ssh/id_ed25519',
      'version:node',
    ]);
    const f = lintEntries(
      mem(['The agent runs on Node 18', 'Backups are in /mnt/nas'], {
        machine: { where: 'this machine', commands: { node: { found: true, version: '20.19.2' } } },
      }),
    );
    assert.equal(f.length, 1);
    assert.equal(f[0].kind, 'stale');
    assert.match(f[0].message, /this machine has node 20\.19\.2/);
  });

  it("an entry about another machine makes no claim about this one (its OS, tools and paths are that machine's)", () => {
    for (const t of [
      "Alice's laptop runs Fedora 40",
      'Logs on the prod server are in /var/log/app',
      "The user's MacBook has Node 18 and `brew`",
      'Deploys go to the staging box at /srv/stage',
      'Her phone is an iPhone with iOS 17',
      'On another machine the repo is at ~/work/repo',
    ])
      assert.deepEqual(extractClaims(t), [], t);
    // this machine's entries keep theirs ("the server" alone is the agent's own, as is "User runs")
    assert.deepEqual(
      extractClaims('User runs Debian 12').map((c) => `${c.kind}:${c.key}`),
      ['os:debian'],
    );
    assert.deepEqual(
      extractClaims('The server runs Ubuntu 22.04').map((c) => `${c.kind}:${c.key}`),
      ['os:ubuntu'],
    );
    assert.deepEqual(
      extractClaims('Boxes of books are listed in /home/me/books').map((c) => c.key),
      ['/home/me/books'],
    );
    const f = lintEntries(
      mem(["Alice's laptop runs Fedora 40", 'This VM runs Debian 11'], {
        machine: { where: 'this machine', os: { id: 'debian', versionId: '12' } },
      }),
    );
    assert.deepEqual(
      f.filter((x) => x.kind === 'stale').map((x) => x.entries.length),
      [1],
      'only the entry about this machine is stale',
    );
  });

  it('the weighted prefix-filtered join finds exactly the pairs the all-pairs scan finds', () => {
    const words = [
      'alpha',
      'beta',
      'gamma',
      'delta',
      'port',
      'uses',
      'server',
      'staging',
      'prod',
      'docker',
      'node',
      'tabs',
    ];
    let seed = 7;
    const r = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const texts = Array.from({ length: 300 }, () =>
      Array.from({ length: 3 + Math.floor(r() * 5) }, () => words[Math.floor(r() * words.length)]).join(' '),
    );
    const items = texts.map((t, i) => prepare(i, t));
    const got = new Set(candidatePairs(items, 0.25, Infinity).map(([a, b]) => `${a}:${b}`));
    const df = new Map<string, number>();
    for (const it of items) for (const k of it.masked) df.set(k, (df.get(k) ?? 0) + 1);
    const w = (k: string): number => Math.log(1 + Math.max(items.length, 1000) / df.get(k)!);
    let checked = 0;
    for (let i = 0; i < items.length; i++) {
      for (let j = i + 1; j < items.length; j++) {
        const a = new Set(items[i].masked);
        const b = new Set(items[j].masked);
        let inter = 0;
        let union = 0;
        for (const x of new Set([...a, ...b])) {
          union += w(x);
          if (a.has(x) && b.has(x)) inter += w(x);
        }
        if (inter / union >= 0.25) {
          checked++;
          assert.ok(got.has(`${i}:${j}`), `missed ${i}:${j}`);
        }
      }
    }
    assert.ok(checked > 100 && got.size === checked, `${checked} similar pairs, ${got.size} candidates`);
  });

  it('calls swapped roles a contradiction, never a near-duplicate to merge (QA issue 4.1)', () => {
    for (const [x, y] of [
      ['Prefers TypeScript over JavaScript', 'Prefers JavaScript over TypeScript'],
      ['Uses pnpm, not npm', 'Uses npm, not pnpm'],
      ['Prefers TypeScript over JavaScript for new code', 'Prefers JavaScript over TypeScript'],
    ]) {
      const f = lintEntries(mem([x, y]));
      assert.deepEqual(
        f.map((g) => g.kind),
        ['contradiction'],
        `${x} / ${y}`,
      );
      assert.match(f[0].message, /roles swapped/);
    }
    // The same words in another order without a relation between them are the same fact.
    assert.deepEqual(
      lintEntries(mem(['Uses TypeScript and Go at work', 'Uses Go and TypeScript at work'])).map((g) => g.kind),
      ['near-duplicate'],
    );
  });

  it('never puts two contradicting entries into one near-duplicate cluster', () => {
    const f = lintEntries(
      mem([
        'Prefers TypeScript over JavaScript',
        'Prefers JavaScript over TypeScript',
        'Prefers TypeScript and JavaScript',
      ]),
    );
    const contradictions = f.filter((g) => g.kind === 'contradiction');
    assert.ok(contradictions.some((g) => g.entries.includes('e1') && g.entries.includes('e2')));
    for (const g of f.filter((x) => x.kind === 'near-duplicate')) {
      assert.ok(
        !(g.entries.includes('e1') && g.entries.includes('e2')),
        'a contradicting pair was clustered as near-duplicates',
      );
    }
  });

  it('finds a near-duplicate between one sentence of a long entry and a short entry in another store (QA issue 4.2)', () => {
    const input: LintInput = {
      stores: [
        {
          store: 'hermes:/h',
          files: [
            {
              kind: 'hermes-user',
              file: '/h/memories/USER.md',
              entries: [
                { id: 'u1', text: 'Name: Dana. Timezone Europe/Berlin. Prefers concise answers with code first.' },
              ],
            },
          ],
        },
        {
          store: 'agent-zero:/a0',
          files: [
            {
              kind: 'agent-zero-fragments',
              file: '/a0/usr/memory/default/index.pkl',
              entries: [{ id: 'f1', text: 'User prefers concise answers and TypeScript examples.' }],
            },
          ],
        },
      ],
    };
    const f = lintEntries(input);
    assert.deepEqual(
      f.map((g) => g.kind),
      ['near-duplicate'],
    );
    assert.deepEqual(f[0].stores, ['hermes:/h', 'agent-zero:/a0']);
    assert.ok(
      f[0].evidence!.some((e) => e.startsWith('index.pkl (area fragments) #1')),
      f[0].evidence!.join('\n'),
    );
    // Different additions to different statements stay apart.
    assert.deepEqual(
      lintEntries(mem(['Prefers concise answers with code first', 'Prefers long answers with diagrams'])).filter(
        (g) => g.kind === 'near-duplicate',
      ),
      [],
    );
  });

  it('says "Hermes drops exact repeats" only for exact repeats (QA issue 4.6)', () => {
    const [exact] = lintEntries(mem(['Uses VS Code with Vim keybindings.', 'Uses VS Code with Vim keybindings.']));
    assert.match(exact.message, /Hermes drops exact repeats/);
    const [folded] = lintEntries(mem(['Uses VS Code with Vim keybindings.', 'uses VS Code with Vim keybindings']));
    assert.equal(folded.kind, 'duplicate');
    assert.doesNotMatch(folded.message, /drops exact repeats/);
    assert.match(folded.message, /differ only in case, spacing or punctuation, so Hermes keeps them all/);
  });

  it('reports untraceable only for kinds the store traces (QA issue 4.3)', () => {
    const entry = (id: string) => ({ id, text: `Entry ${id} here`, provenance: { traced: false, note: 'no trace' } });
    const input: LintInput = {
      stores: [
        {
          store: 'hermes:/h',
          files: [
            { kind: 'hermes-memory', file: '/h/memories/MEMORY.md', entries: [entry('m1')] },
            { kind: 'hermes-skill', file: '/h/skills', entries: [entry('s1')] },
            { kind: 'hermes-soul', file: '/h/SOUL.md', entries: [entry('soul1')] },
            { kind: 'hermes-archive', file: '/h/memories/ARCHIVE.jsonl', entries: [entry('a1')] },
            { kind: 'agent-zero-main', file: '/a0/index.pkl', entries: [entry('z1')] },
          ],
        },
      ],
    };
    const f = lintEntries(input).filter((g) => g.kind === 'untraceable');
    assert.deepEqual(
      f.map((g) => g.entries[0]),
      ['m1'],
    );
    assert.doesNotMatch(f[0].suggestion!, /nobody knows/);
  });

  it('lints 200,000 entries without overflowing the call stack (QA issue 4.5)', function () {
    this.timeout(60_000);
    const entries = Array.from({ length: 200_000 }, (_, i) => ({
      id: `e${i}`,
      text: `Ticket ${i} closed`,
      createdAt: '2020-01-01T00:00:00Z',
      provenance: { traced: false },
    }));
    const f = lintEntries({
      stores: [{ store: 'hermes:/h', files: [{ kind: 'hermes-memory', file: '/h/memories/MEMORY.md', entries }] }],
      now: Date.parse('2026-01-01T00:00:00Z'),
    });
    assert.equal(f.filter((g) => g.kind === 'age').length, 200_000);
    assert.equal(f.filter((g) => g.kind === 'untraceable').length, 200_000);
  });

  it('reaches its precision and recall on the labelled cases (dev and held-out)', async () => {
    const report = evaluate(await loadCases(path.join(REPO, 'test', 'cases', 'memory-lint')));
    assert.ok(report.cases.length >= 100, `${report.cases.length} cases`);
    for (const split of ['dev', 'heldout'] as const) {
      const { precision, recall } = pr(report.scores[split].all);
      assert.ok(precision >= 0.95, `${split} precision ${precision}`);
      assert.ok(recall >= 0.9, `${split} recall ${recall}`);
    }
    for (const kind of ['duplicate', 'near-duplicate', 'contradiction', 'drift', 'stale']) {
      const { precision } = pr(report.scores.all[kind]);
      assert.ok(precision >= 0.9, `${kind} precision ${precision}`);
    }
  });
});
