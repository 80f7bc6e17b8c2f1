import * as assert from 'node:assert/strict';
import { lintEntries, type LintInput } from '../../sidecar/memory/lint';
import { known, relation, specificity, wordnetAntonyms, wordnetLemma } from '../../sidecar/memory/lint/lexicon';
import { prepare } from '../../sidecar/memory/lint/pairs';
import { foreignNegation, languagesNamed } from '../../sidecar/memory/lint/languages';
import { align, anchors, polarity } from '../../sidecar/memory/lint/soft';
import type { LintFinding } from '../../sidecar/protocol';

function mem(texts: string[]): LintInput {
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
  };
}

const PAIR_KINDS = new Set(['duplicate', 'near-duplicate', 'contradiction', 'superseded']);
function pairFindings(texts: string[]): LintFinding[] {
  return lintEntries(mem(texts)).filter((f) => PAIR_KINDS.has(f.kind));
}

describe('memory lint: soft matching with the WordNet-derived lexicon (issue 12)', () => {
  it('reads lemmas, synonyms, derivations and antonyms from the derived lexicon', () => {
    assert.equal(wordnetLemma('answers'), 'answer');
    assert.equal(wordnetLemma('handled'), 'handle');
    assert.equal(wordnetLemma('running'), 'run');
    assert.equal(relation('reply', 'answer'), 'synonym');
    assert.equal(relation('decision', 'decide'), 'derivation');
    assert.equal(relation('reply', 'kitchen'), undefined);
    assert.ok(wordnetAntonyms('short', 'long'));
    assert.ok(!wordnetAntonyms('short', 'brief'));
    // a common word weighs less than a name or a term the lexicon does not know
    assert.ok(known('answer') && !known('kubernetes'));
    assert.ok(specificity('use') < specificity('answer') && specificity('kubernetes') === 1);
  });

  it('finds a paraphrase through synonyms, and says which words matched how', () => {
    const f = pairFindings([
      'Always give concise replies with examples for the billing service',
      'Always give brief answers with examples for the billing service',
    ]);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'near-duplicate');
    const why = (f[0].evidence ?? []).join('\n');
    assert.match(why, /reply~answer \(synonym\)/);
    assert.match(why, /concise~brief \(synonym\)/);
  });

  it('aligns words with weights and keeps what did not match', () => {
    const al = align(prepare(0, 'User prefers concise replies'), prepare(1, 'User likes brief answers and tables'));
    assert.ok(al.links.includes('reply~answer (synonym)'), al.links.join(', '));
    assert.deepEqual(al.restA, []);
    assert.deepEqual(al.restB, ['table']);
    assert.ok(al.contain > 0.8 && al.score < 1, `${al.contain} ${al.score}`);
  });

  it('reads which words a negation covers, clause by clause', () => {
    const p = prepare(0, 'User hardware: MacBook with M5 Apple Silicon. No iOS devices (no iPhone/iPad).');
    const pol = polarity(p);
    assert.equal(pol.get('macbook'), 1);
    assert.equal(pol.get('iphone/ipad'), -1);
    // two negations cancel: "never push without explicit instruction" asserts the instruction
    const q = polarity(prepare(1, 'Never run git push without an explicit instruction.'));
    assert.equal(q.get('push'), -1);
    assert.equal(q.get('instruction'), 1);
    // a preference against: "over" covers up to the next preposition
    const r = polarity(prepare(2, 'Prefers CronJobs via GitOps over local scripts for server-side automation.'));
    assert.equal(r.get('script'), -1);
    assert.equal(r.get('server-side'), 1);
  });

  it('a word negated in one entry and asserted in the other is a contradiction', () => {
    const f = pairFindings([
      'User hardware: MacBook with M5 Apple Silicon. No iOS devices (no iPhone/iPad).',
      'User hardware: MacBook with M5 Apple Silicon and an iPhone.',
    ]);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'contradiction');
    assert.match(f[0].message, /negated in one, asserted in the other/);
    assert.match(f[0].message, /iphone/);
    const g = pairFindings([
      'Never write to the orders database; no inserts or updates.',
      'Writes to the orders database are fine: inserts and updates allowed.',
    ]);
    assert.equal(g.length, 1, JSON.stringify(g));
    assert.equal(g[0].kind, 'contradiction');
  });

  it('restates names, terms and values across two languages', () => {
    const f = pairFindings([
      '部署服务器用 RunPod，SSH 端口 2222，密钥放在 PUBLIC_KEY 环境变量',
      'Deploy server: RunPod, SSH port 2222, key in the PUBLIC_KEY env variable',
    ]);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'near-duplicate');
    assert.match((f[0].evidence ?? []).join('\n'), /two languages/);
    assert.ok(anchors(prepare(0, 'Deploy server: RunPod, SSH port 2222')).has('runpod'));
  });

  it('reads language names in many languages (CLDR names from Intl.DisplayNames) and foreign negations', () => {
    assert.deepEqual(languagesNamed('- Language: ไทยเท่านั้น'), ['th']);
    assert.deepEqual(languagesNamed('Risposte in italiano, mai in inglese'), ['en', 'it']);
    assert.deepEqual(languagesNamed('用中文回复'), ['zh']);
    assert.deepEqual(languagesNamed('polish the UI before the release'), []);
    assert.equal(foreignNegation('πάντα SSH key, όχι password'), 'όχι');
    assert.equal(foreignNegation('always the SSH key, never a password'), undefined);
  });

  it('one language named in two languages is one value; two languages are a conflict', () => {
    const f = pairFindings(['- Language: Thai only', '- Language: ไทยเท่านั้น']);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'near-duplicate');
    assert.match((f[0].evidence ?? []).join('\n'), /naming the same language \(th\)/);
    const g = pairFindings(['Language: Chinese', 'Language: 中文']);
    assert.equal(g.length, 1, JSON.stringify(g));
    assert.equal(g[0].kind, 'near-duplicate');
    const h = pairFindings(['Language: Chinese', 'Language: 日本語']);
    assert.equal(h.length, 1, JSON.stringify(h));
    assert.equal(h[0].kind, 'contradiction');
  });

  it('across two scripts, a negation of the other language counts, and two shared values are enough', () => {
    const f = pairFindings([
      'Ο server deploy στο RunPod: πάντα SSH key μέσω PUBLIC_KEY, όχι password.',
      'RunPod deploys: always the SSH key via PUBLIC_KEY, never a password.',
    ]);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'near-duplicate');
    // negated in the English entry only: not the same statement
    const g = pairFindings([
      'Ο server deploy στο RunPod: πάντα SSH key μέσω PUBLIC_KEY και password.',
      'RunPod deploys: always the SSH key via PUBLIC_KEY, never a password.',
    ]);
    assert.equal(g.length, 0, JSON.stringify(g));
    const h = pairFindings([
      '主题色：主色#ef4444，辅色#22c55e，所有页面统一',
      'Theme colours: primary #ef4444, accent #22c55e on every page',
    ]);
    assert.equal(h.length, 1, JSON.stringify(h));
    assert.equal(h[0].kind, 'near-duplicate');
    const k = pairFindings([
      '主题色：主色#ef4444，辅色#22c55e，所有页面统一',
      'Theme colours: primary #ef4444, accent #3b82f6 on every page',
    ]);
    assert.equal(k.length, 0, JSON.stringify(k));
  });

  it('a number and its unit are one value however they are spaced; a number and a word are two tokens', () => {
    for (const [x, y] of [
      ['The build server has 8 GB of RAM and 4 cores', 'The build server has 8GB of RAM and 4 cores'],
      ['Backups run every 15 min on the NAS box', 'Backups run every 15min on the NAS box'],
      [
        'Review model: Qwen 3.7 Max, fixed; Opus only on escalation',
        'Review model: Qwen 3.7Max, fixed; Opus only on escalation',
      ],
    ]) {
      const f = pairFindings([x, y]);
      assert.equal(f.length, 1, JSON.stringify(f));
      assert.equal(f[0].kind, 'near-duplicate', `${x} / ${y}`);
    }
    // another amount is still another value
    const g = pairFindings([
      'The build server has 8 GB of RAM and 4 cores',
      'The build server has 16GB of RAM and 4 cores',
    ]);
    assert.equal(g.length, 1, JSON.stringify(g));
    assert.equal(g[0].kind, 'contradiction');
  });

  it('finds a change from a value another entry names, and several values changed in one place', () => {
    const f = pairFindings([
      'Project stack: FastAPI + PostgreSQL + Redis, deployed in Docker containers.',
      'Project stack migrated: switched from PostgreSQL to MySQL because the team knows MySQL.',
    ]);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'superseded');
    assert.deepEqual(f[0].entries, ['e1', 'e2']);
    const g = pairFindings([
      'Nightly backup of the photo library runs at 02:00 and 02:30 on the NAS box.',
      'Nightly backup of the photo library runs at 04:00 and 04:30 on the NAS box.',
    ]);
    assert.equal(g.length, 1, JSON.stringify(g));
    assert.equal(g[0].kind, 'contradiction');
    assert.match(g[0].message, /different value/);
  });

  it('the same label with the same named value is a restatement; another value is a conflict', () => {
    const f = pairFindings(['TZ: Asia/Shanghai', 'Timezone: UTC+8, Shanghai']);
    assert.equal(f.length, 1, JSON.stringify(f));
    assert.equal(f[0].kind, 'near-duplicate');
    const g = pairFindings(['Timezone: America/New_York (Eastern)', 'Timezone: America/Chicago (Central)']);
    assert.equal(g.length, 1, JSON.stringify(g));
    assert.equal(g[0].kind, 'contradiction');
  });

  it('keeps scoped look-alikes and unrelated pairs quiet', () => {
    for (const pair of [
      [
        'The deploy target for previews is the staging cluster.',
        'The deploy target for releases is the production cluster.',
      ],
      ['Private skills in ~/.hermes/my-skills/.', 'Official skills in ~/.hermes/skills/.'],
      ['Loves Chinese food', 'Hates Italian food'],
      ['Cron: digest 08:00 UTC.', 'git auto-commit 00:00 UTC.'],
      ['Name: Ryan', 'Name: Hermes Prime'],
      // template siblings about other subjects (the bench's shapes)
      [
        'Ines owns the reports service and is on call every Friday',
        'Ines owns the Lena service and is on call every Friday',
      ],
      [
        'kapornu owns the pnpm service and is on call every Monday',
        'Alice owns the kapornu service and is on call every Monday',
      ],
      [
        'Lena does not use Docker for the toferdel pipeline',
        'docker owns the toferdel service and is on call every Tuesday',
      ],
      ['Project galonon targets Node 20 and uses go for builds', 'node does not use Docker for the go pipeline'],
    ]) {
      assert.deepEqual(
        pairFindings(pair).map((f) => f.kind),
        [],
        pair.join(' / '),
      );
    }
  });
});
