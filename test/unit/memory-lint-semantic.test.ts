import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BUNDLED_MODEL, embedEntries, loadBundledEncoder, type EncoderResult } from '../../sidecar/memory/lint/encoder';
import { lintEntries, type LintEntry, type LintInput } from '../../sidecar/memory/lint/index';
import { runLint } from '../../sidecar/memory/lint/run';
import {
  cosine,
  englishLike,
  MAX_SEMANTIC_PAIRS_ENTRIES,
  semanticCandidates,
  thresholdsFor,
} from '../../sidecar/memory/lint/semantic';

/** One Hermes MEMORY.md holding these entries (ids a, b, c ...). */
function memory(texts: Array<string | LintEntry>): LintInput {
  const entries = texts.map((t, k) => (typeof t === 'string' ? { id: String.fromCharCode(97 + k), text: t } : t));
  return {
    stores: [{ store: 'hermes:/h', files: [{ kind: 'hermes-memory', file: '/h/memories/MEMORY.md', entries }] }],
  };
}

function pairKinds(input: LintInput): string[] {
  return lintEntries(input)
    .filter((f) => f.kind !== 'store' && f.kind !== 'over-budget')
    .map((f) => f.kind);
}

/** A vector at angle θ from [1, 0, 0, 0] (cosine similarity cos θ with it). */
function at(cos: number): Float32Array {
  return Float32Array.from([cos, Math.sqrt(1 - cos * cos), 0, 0]);
}

const missing = (): Promise<EncoderResult> =>
  loadBundledEncoder({
    require: (id) => {
      throw new Error(`Cannot find module '${id}'`);
    },
  });

describe('memory lint by meaning (sentence vectors, issue 12 item 2)', function () {
  this.timeout(60_000);

  it('the bundled encoder gives unit vectors of 512 dimensions, close for a paraphrase and far for another fact', async () => {
    const r = await loadBundledEncoder();
    assert.ok('encoder' in r, 'missing' in r ? r.missing : '');
    assert.equal(r.encoder.model, BUNDLED_MODEL);
    const [a, b, c] = await r.encoder.embed([
      'Nightly backups are written to the NAS under /backups; keep them for 30 days.',
      'Backups go to the NAS every night (/backups), retained 30 days.',
      'Alice owns billing',
    ]);
    assert.equal(a.length, 512);
    assert.ok(Math.abs(cosine(a, a) - 1) < 1e-5);
    assert.ok(cosine(a, b) > 0.8, `paraphrase ${cosine(a, b)}`);
    assert.ok(cosine(a, c) < 0.5, `another fact ${cosine(a, c)}`);
    // a text seen before is not encoded again (the same vector comes back)
    const [again, d] = await r.encoder.embed(['Alice owns billing', 'Bob owns search']);
    assert.equal(again, c);
    assert.equal(d.length, 512);
  });

  it('finds a paraphrase the lexical rules miss, and says why in the evidence', async () => {
    for (const [x, y] of [
      [
        'Nightly backups are written to the NAS under /backups; keep them for 30 days.',
        'Backups go to the NAS every night (/backups), retained 30 days.',
      ],
      [
        'Meeting notes belong in the team wiki, not in chat.',
        'Write meeting notes to the wiki rather than posting them in chat.',
      ],
    ]) {
      assert.deepEqual(pairKinds(memory([x, y])), [], 'the lexical rules alone stay quiet');
      const input = memory([x, y]);
      assert.deepEqual(await embedEntries(input), []);
      const near = lintEntries(input).filter((f) => f.kind === 'near-duplicate');
      assert.equal(near.length, 1, x);
      assert.deepEqual(near[0].entries, ['a', 'b']);
      assert.match(
        (near[0].evidence ?? []).join('\n'),
        /sentence similarity 0\.\d\d \(bundled Universal Sentence Encoder\) and no value, negation or scope differs/,
      );
    }
  });

  it('stays quiet for scoped look-alikes and different facts close in meaning', async () => {
    for (const [x, y] of [
      ['Uses tabs for indentation in Go', 'Uses spaces for indentation in Python'],
      [
        'The deploy target for previews is the staging cluster.',
        'The deploy target for releases is the production cluster.',
      ],
      ['Alice owns billing', 'Bob owns search'],
      ['Dentist appointment on 2026-01-05', 'Dentist appointment on 2026-02-10'],
      [
        "User's project is a TypeScript VS Code extension at ~/code/mem-lens (pnpm, vitest, esbuild)",
        'Project uses tabs, 120-char lines; run tests with `pnpm test`. CI is GitHub Actions (workflow ci.yml).',
      ],
    ]) {
      const input = memory([x, y]);
      await embedEntries(input);
      assert.ok(input.stores[0].files[0].entries.every((e) => e.embedding?.model === BUNDLED_MODEL));
      assert.deepEqual(pairKinds(input), [], `${x} / ${y}`);
    }
  });

  it('the English-only encoder does not judge entries in another language', () => {
    assert.equal(englishLike('Backups go to the NAS every night'), true);
    assert.equal(englishLike("L'utente vuole risposte fulminee: una sola frase di 5–22 parole."), false);
    assert.equal(englishLike('回复必须精简：要点优先'), false);
    // the same vector, but Italian: no near-duplicate by meaning
    const v = at(1);
    const input = memory([
      { id: 'a', text: "L'utente vuole risposte fulminee e brevi.", embedding: { model: BUNDLED_MODEL, vector: v } },
      { id: 'b', text: 'Il bot deve rispondere con una sola frase.', embedding: { model: BUNDLED_MODEL, vector: v } },
    ]);
    assert.deepEqual(pairKinds(input), []);
  });

  it('compares store vectors only within one model, with the conservative default for unknown models', () => {
    const texts = ['Staging database lives on db-stage-1', 'Reports go to the finance team every Monday'];
    const entries = (va: [string, Float32Array], vb: [string, Float32Array]): LintEntry[] => [
      { id: 'a', text: texts[0], embedding: { model: va[0], vector: va[1] } },
      { id: 'b', text: texts[1], embedding: { model: vb[0], vector: vb[1] } },
    ];
    // identical vectors of two models: not compared
    assert.deepEqual(pairKinds(memory(entries(['a0:model-x', at(1)], ['mem0:model-y', at(1)]))), []);
    // one unknown model: its threshold is conservative (0.92 with word overlap; 0.96 without)
    const th = thresholdsFor('mem0:text-embedding-3-small');
    assert.ok(th.duplicate >= 0.9 && th.strong > th.duplicate && !th.englishOnly);
    assert.deepEqual(pairKinds(memory(entries(['m', at(1)], ['m', at(0.9)]))), []);
    const f = lintEntries(memory(entries(['m', at(1)], ['m', at(0.99)]))).filter((x) => x.kind === 'near-duplicate');
    assert.equal(f.length, 1);
    assert.match((f[0].evidence ?? []).join('\n'), /sentence similarity 0\.99 \(the store's m vectors\)/);
  });

  it('pairs entries by meaning only up to a bound, and says so when it skips', () => {
    const vecs = Array.from({ length: 5 }, (_, k) => ({ model: 'm', vector: at(1 - k * 0.001) }));
    const c = semanticCandidates([...vecs, undefined, { model: 'other', vector: at(1) }]);
    assert.equal(c.pairs.length, 10); // all pairs of the five of model m; none across models
    assert.equal(c.skipped, 0);
    const n = MAX_SEMANTIC_PAIRS_ENTRIES + 1;
    const many = memory(
      Array.from({ length: n }, (_, k) => ({
        id: `e${k}`,
        text: `Fact number ${k} about topic ${k}`,
        embedding: { model: 'm', vector: Float32Array.from([k % 7, 1, k % 3, 0]) },
      })),
    );
    const note = lintEntries(many).find((f) => f.kind === 'store' && /not paired by meaning/.test(f.message));
    assert.ok(note, 'a lint note says what was skipped');
    assert.equal(note.severity, 'info');
    assert.match(note.message, new RegExp(`${n.toLocaleString('en-US')} entries with sentence vectors`));
  });

  it('embedEntries keeps store vectors, encodes up to a bound, and notes what it skipped', async () => {
    const own = { model: 'agent-zero:sentence-transformers/all-MiniLM-L6-v2', vector: at(1) };
    const input = memory([{ id: 'a', text: 'Has its own vector', embedding: own }, 'Needs one', 'Needs one too']);
    const notes = await embedEntries(input, { maxEntries: 1 });
    assert.equal(notes.length, 1);
    assert.equal(notes[0].kind, 'store');
    assert.equal(notes[0].severity, 'info');
    assert.match(notes[0].message, /^Lint note: to stay fast, 2 entries were not compared by meaning/);
    assert.match(notes[0].message, /at most 1 entries per lint/);
    const [a, b, c] = input.stores[0].files[0].entries;
    assert.equal(a.embedding, own);
    assert.equal(b.embedding, undefined);
    assert.equal(c.embedding, undefined);
    assert.deepEqual(await embedEntries(input, { maxEntries: 2 }), []);
    assert.equal(a.embedding, own);
    assert.equal(input.stores[0].files[0].entries[1].embedding?.model, BUNDLED_MODEL);
  });

  it('a missing encoder package is a lint note, not a crash (embedEntries and runLint)', async () => {
    const r = await missing();
    assert.ok('missing' in r);
    assert.match(r.missing, /Cannot find module '@energetic-ai\/embeddings'/);
    const input = memory(['Backups go to the NAS every night']);
    const notes = await embedEntries(input, { encoder: r });
    assert.equal(notes.length, 1);
    assert.match(notes[0].message, /^Lint note: entries were not compared by meaning \(sentence similarity\)/);
    assert.match(notes[0].message, /install the npm packages @energetic-ai\/embeddings/);
    // the fix is installing them, not linting fewer stores (that is the fix of the size bound)
    assert.match(notes[0].suggestion ?? '', /install the packages named above/);
    assert.doesNotMatch(notes[0].suggestion ?? '', /smaller set of stores/);
    assert.equal(input.stores[0].files[0].entries[0].embedding, undefined);

    const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-semantic-'));
    try {
      const h = path.join(tmp, '.hermes');
      await fs.mkdir(path.join(h, 'memories'), { recursive: true });
      await fs.writeFile(
        path.join(h, 'memories', 'MEMORY.md'),
        'Meeting notes belong in the team wiki, not in chat.\n§\nWrite meeting notes to the wiki rather than posting them in chat.',
      );
      const off = await runLint({ stores: [`hermes:${h}`] }, { probe: null, semantic: { encoder: r } });
      assert.deepEqual(
        off.findings.map((f) => f.kind),
        ['store'],
      );
      assert.match(off.findings[0].message, /not compared by meaning/);
      const on = await runLint({ stores: [`hermes:${h}`] }, { probe: null });
      assert.deepEqual(
        on.findings.map((f) => f.kind),
        ['near-duplicate'],
      );
      assert.deepEqual((await runLint({ stores: [`hermes:${h}`] }, { probe: null, semantic: false })).findings, []);
    } finally {
      await fs.rm(tmp, { recursive: true, force: true });
    }
  });
});
