import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { lintEntries, type LintInput } from '../../sidecar/memory/lint';
import { evaluateReal, loadCases, pr, wordOverlap } from '../../sidecar/memory/lint/eval';
import { formatFindings } from '../../sidecar/memory/lint/format';
import { frameDiff, labelValues, updateMarker } from '../../sidecar/memory/lint/slots';
import { tokens } from '../../sidecar/memory/lint/text';
import { REPO } from './helpers/paths';

function mem(texts: Array<string | { text: string; createdAt: string }>): LintInput {
  return {
    stores: [
      {
        store: 'hermes:/h',
        files: [
          {
            kind: 'hermes-memory',
            file: '/h/memories/MEMORY.md',
            entries: texts.map((t, i) => ({ id: `e${i + 1}`, ...(typeof t === 'string' ? { text: t } : t) })),
          },
        ],
      },
    ],
  };
}

describe('memory lint: slots, changes over time, groups (issue 12)', () => {
  it('reads update markers in English and Chinese, with from/to values', () => {
    assert.deepEqual(updateMarker('Kiran moved from Whitefield to Electronic City.'), {
      phrase: 'moved from',
      retires: false,
      from: 'whitefield',
      to: 'electronic city',
    });
    assert.equal(updateMarker('User is no longer vegetarian')?.retires, true);
    assert.equal(updateMarker('项目技术栈已迁移：从 PostgreSQL 切换到 MySQL')?.from, 'postgresql');
    assert.equal(updateMarker('Hermes dashboard now runs as a systemd service')?.phrase, 'now');
    // a bare "now" is no change; neither is a plain statement
    assert.equal(updateMarker('Do it now'), undefined);
    assert.equal(updateMarker('Kiran lives in Whitefield.'), undefined);
  });

  it('aligns two wordings and finds the one span that differs', () => {
    const d = frameDiff('Kiran lives in Whitefield.', 'Kiran lives in Electronic City.');
    assert.ok(d);
    assert.deepEqual(
      d.a.map((t) => t.t),
      ['whitefield'],
    );
    assert.deepEqual(
      d.b.map((t) => t.t),
      ['electronic', 'city'],
    );
    assert.deepEqual(d.before, ['kiran', 'live']);
    // two places differ: no single frame
    assert.equal(frameDiff('Kiran lives in Whitefield.', 'Priya lives in Electronic City.'), undefined);
  });

  it('parses "Label: value" lines', () => {
    assert.deepEqual(
      labelValues('**Timezone:** Asia/Shanghai (GMT+8)').map((x) => [x.label.join(' '), x.value]),
      [['timezone', 'Asia/Shanghai (GMT+8)']],
    );
    assert.deepEqual(
      labelValues('- Language: Thai only').map((x) => x.value),
      ['Thai only'],
    );
  });

  it('tokenises every script: accents kept, Chinese as character bigrams', () => {
    assert.deepEqual(
      tokens('Công ty Cổ phần').map((t) => t.t),
      ['công', 'ty', 'cổ', 'phần'],
    );
    assert.deepEqual(
      tokens('办公室在绍兴').map((t) => t.t),
      ['办公', '公室', '室在', '在绍', '绍兴'],
    );
  });

  it('reports a change over time as superseded, says which entry is newer and how it knows', () => {
    const [f] = lintEntries(mem(['Kiran lives in Whitefield.', 'Kiran moved from Whitefield to Electronic City.']));
    assert.equal(f.kind, 'superseded');
    assert.deepEqual(f.entries, ['e1', 'e2']);
    assert.match(f.message, /records the change \("moved from"\)/);
    assert.ok(f.evidence!.some((e) => e === 'how it knows which is newer: the wording of the change'));
    // by time, when the store keeps it: the later one wins, whatever the order in the file
    const [g] = lintEntries(
      mem([
        { text: 'The deploy target is the production cluster now.', createdAt: '2026-06-10T00:00:00Z' },
        { text: 'The deploy target is the staging cluster.', createdAt: '2026-06-01T00:00:00Z' },
      ]),
    );
    assert.equal(g.kind, 'superseded');
    assert.deepEqual(g.entries, ['e2', 'e1']);
  });

  it('"the user lives in X" vs "in Y": one shared word besides the subject is frame enough', () => {
    const f = lintEntries(mem(['The user lives in New York.', 'The user lives in London.']));
    assert.deepEqual(
      f.map((x) => x.kind),
      ['contradiction'],
    );
    assert.match(f[0].message, /"new york" vs "london"/);
  });

  it('a past-tense fact and the move agree', () => {
    assert.deepEqual(
      lintEntries(mem(['Kiran lived in Whitefield.', 'Kiran moved from Whitefield to Electronic City.'])),
      [],
    );
  });

  it('the Chinese/English reply language is a contradiction, not a near-duplicate to merge (issue 12)', () => {
    const f = lintEntries(
      mem([
        'Communicates in Chinese (Simplified). Prefers replies in Chinese.',
        'Communicates in Chinese (Simplified) but prefers replies in English.',
      ]),
    );
    assert.deepEqual(
      f.map((x) => x.kind),
      ['contradiction'],
    );
    assert.match(f[0].message, /"chinese" vs "english"/);
  });

  it('a quoted correction ("not 8188") and "without" are not negations', () => {
    const f = lintEntries(
      mem([
        'RunPod ComfyUI: use official runpod/stable-diffusion:comfy-ui-6.0.0 (ComfyUI port 3000, not 8188).',
        'RunPod ComfyUI: use official runpod/stable-diffusion:comfy-ui-6.0.0 (ComfyUI port 3000).',
      ]),
    );
    assert.deepEqual(
      f.map((x) => x.kind),
      ['near-duplicate'],
    );
    const g = lintEntries(mem(['No jargon without explanation', 'No jargon without explanation, ever']));
    assert.deepEqual(
      g.map((x) => x.kind),
      ['near-duplicate'],
    );
  });

  it('scoped look-alikes stay apart: two subjects, two values', () => {
    assert.deepEqual(lintEntries(mem(['Kiran lives in Whitefield.', 'Priya lives in Electronic City.'])), []);
    assert.deepEqual(
      lintEntries(mem(['Private skills in ~/.hermes/my-skills/.', 'Official skills in ~/.hermes/skills/.'])),
      [],
    );
  });

  it('50 copies that differ only in a number are one finding with the count and every member', () => {
    const texts = Array.from({ length: 50 }, (_, i) => `User prefers dark mode in editor number ${i}`);
    const f = lintEntries(mem(texts));
    assert.equal(f.length, 1);
    assert.equal(f[0].kind, 'near-duplicate');
    assert.equal(f[0].entries.length, 50);
    assert.match(f[0].message, /^50 entries repeat one wording/);
  });

  it('200 copies are not silent either (no words dropped as stop words without a word)', () => {
    const texts = Array.from({ length: 200 }, (_, i) => `User prefers dark mode in editor number ${i}`);
    const f = lintEntries(mem(texts));
    assert.equal(f.filter((x) => x.kind === 'near-duplicate' && x.entries.length === 200).length, 1);
  });

  it('one fact restated with values that repeat and disagree is one contradiction group', () => {
    const f = lintEntries(
      mem([
        'The api service uses port 8080',
        'The api service uses port 8080.',
        'The api service uses port 9090',
        'The api service uses port 8080!',
        'The api service uses port 7070',
      ]),
    );
    const c = f.filter((x) => x.kind === 'contradiction');
    assert.equal(c.length, 1, JSON.stringify(f.map((x) => x.message)));
    assert.equal(c[0].entries.length, 5);
    assert.match(c[0].message, /3 different values/);
  });

  it('copies that differ in two values are grouped by the value that stays the same, never one finding per pair', () => {
    // 3 hosts × ports: "host 0" lines agree on the host and differ in the port
    for (const n of [50, 200, 1000]) {
      const texts = Array.from({ length: n }, (_, i) => `Deploy host ${i % 3} runs on port ${8000 + i}`);
      const f = lintEntries(mem(texts));
      const pairs = f.filter((x) => x.kind !== 'store');
      assert.equal(pairs.length, 3, `${n}: ${JSON.stringify(f.map((x) => x.message.slice(0, 80)))}`);
      assert.deepEqual(
        pairs.map((x) => x.entries.length).reduce((a, b) => a + b, 0),
        n,
        'every entry is in one group',
      );
      for (const g of pairs) {
        assert.match(g.message, /entries repeat one wording and differ only in a value each/);
        assert.ok((g.evidence ?? []).some((e) => /the same in every member: [012]; only value 2 differs/.test(e)));
      }
    }
  });

  it('contradictions that share entries are one group finding with the count, the members and the pairs', () => {
    const f = lintEntries(
      mem([
        'The staging database is Postgres 15',
        'Staging database: Postgres 16 since the upgrade',
        'The staging database is Postgres 14',
        'Kiran lives in Whitefield.',
      ]),
    );
    const c = f.filter((x) => x.kind === 'contradiction');
    assert.equal(c.length, 1, JSON.stringify(f.map((x) => x.message)));
    assert.deepEqual([...c[0].entries].sort(), ['e1', 'e2', 'e3']);
    assert.match(c[0].message, /^3 entries disagree about one thing \(\d conflicting pairs\)/);
    assert.ok(
      (c[0].evidence ?? []).filter((e) => e.startsWith('pair: Possible contradiction')).length >= 2,
      (c[0].evidence ?? []).join('\n'),
    );
    // two entries stay one pair finding
    const two = lintEntries(mem(['The api service uses port 8080', 'The api service uses port 9090']));
    assert.deepEqual(
      two.map((x) => [x.kind, x.entries.length]),
      [['contradiction', 2]],
    );
  });

  it('a store larger than the join budget keeps to it and says so, in the result and the CLI text', () => {
    const syl = ['ka', 'lo', 'mi', 'ren', 'to', 'vas', 'qui', 'del'];
    const name = (i: number): string => `${syl[i % 8]}${syl[Math.floor(i / 8) % 8]}${syl[Math.floor(i / 64) % 8]}`;
    // 24,000 entries (no values, so no template groups) over 400 subjects: each subject in 60 entries
    const word = (i: number): string => Array.from({ length: 5 }, (_, k) => syl[Math.floor(i / 8 ** k) % 8]).join('');
    const texts = Array.from(
      { length: 24_000 },
      (_, i) => `${['Staging host for', 'Deploy key for', 'Weekly sync about'][i % 3]} ${name(i % 400)} is ${word(i)}`,
    );
    const t0 = process.cpuUsage();
    const f = lintEntries(mem(texts));
    const cpu = process.cpuUsage(t0);
    const note = f.find((x) => x.kind === 'store' && x.message.startsWith('Lint note'));
    assert.ok(note, 'a lint note');
    assert.ok(
      (note.evidence ?? []).some((e) =>
        /instead of 200: above 20,000 entries and sentences the comparison keeps to about \d+ candidate pairs per entry/.test(
          e,
        ),
      ),
      (note.evidence ?? []).join('\n'),
    );
    assert.ok((cpu.user + cpu.system) / 1e6 < 30, `CPU ${(cpu.user + cpu.system) / 1e6} s`);
    const text = formatFindings(f);
    assert.match(text, /INFO store: Lint note: to stay fast, \d+ words? shared by more than \d+ entries each/);
    assert.doesNotMatch(text, /^No findings/);
  });

  it('says what it skipped to stay fast', () => {
    const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];
    const texts = Array.from(
      { length: 600 },
      (_, i) => `shared common words here ${words[i % 8]} ${words[(i * 3) % 8]} item${i}`,
    );
    const f = lintEntries(mem(texts));
    const note = f.find((x) => x.kind === 'store' && x.message.startsWith('Lint note'));
    assert.ok(note, 'a lint note about skipped words');
    assert.match(note.message, /shared by more than 200 entries/);
  });

  it('measures word overlap in any script', () => {
    assert.equal(wordOverlap('a b c', 'a b c'), 1);
    assert.ok(wordOverlap('用户办公室在绍兴', '办公室在绍兴') > 0.6);
  });

  it('the real-wording set loads with one split per source and reports every family', async () => {
    const cases = await loadCases(path.join(REPO, 'test', 'cases', 'memory-real'));
    assert.ok(cases.length >= 300, `${cases.length} cases`);
    const splitOfSource = new Map<string, string>();
    for (const c of cases) {
      assert.ok(c.split === 'dev' || c.split === 'heldout', c.id);
      assert.ok(c.source, `${c.id} has a source`);
      assert.equal(splitOfSource.get(c.source!) ?? c.split, c.split, `${c.source} is in one split`);
      splitOfSource.set(c.source!, c.split!);
    }
    const r = evaluateReal(cases);
    for (const s of ['dev', 'heldout'] as const) {
      assert.ok(r.scores[s]['family:duplicate'] && r.scores[s]['family:contradiction'], s);
      // a floor that guards against regressions (the targets of issue 12 are not met yet: docs/memory-lint.md)
      assert.ok(
        pr(r.scores[s]['family:all']).precision >= 0.8,
        `${s} precision ${pr(r.scores[s]['family:all']).precision}`,
      );
    }
    const lo = r.lowOverlap.dev.low + r.lowOverlap.heldout.low;
    const all = r.lowOverlap.dev.pairs + r.lowOverlap.heldout.pairs;
    assert.ok(lo / all >= 0.4, `${lo} of ${all} expected pairs have little word overlap`);
  });
});
