import * as assert from 'node:assert/strict';
import { lintEntries, type LintInput } from '../../sidecar/memory/lint';
import { cjkAntonyms, familyOf, mentions, sameZone, tzOffsets } from '../../sidecar/memory/lint/choices';
import { prepare } from '../../sidecar/memory/lint/pairs';
import { updateMarker } from '../../sidecar/memory/lint/slots';
import { tokens } from '../../sidecar/memory/lint/text';

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

/** The pair findings (duplicate, near-duplicate, contradiction, superseded) of a lint of these entries. */
function pairFindings(texts: Array<string | { text: string; createdAt: string }>) {
  return lintEntries(mem(texts)).filter((f) =>
    ['duplicate', 'near-duplicate', 'contradiction', 'superseded'].includes(f.kind),
  );
}

function kinds(texts: Array<string | { text: string; createdAt: string }>): string[] {
  return pairFindings(texts).map((f) => f.kind);
}

describe('memory lint: contradictions in any sentence shape (issue 12, choices and markers)', () => {
  it('reads which members of a family an entry chooses, and which it is against', () => {
    const m = mentions(prepare(0, 'Prefers pnpm over npm'));
    assert.deepEqual(
      m.map((x) => [x.member, x.choice, x.against]),
      [
        ['pnpm', true, false],
        ['npm', true, true],
      ],
    );
    assert.equal(mentions(prepare(0, 'Uses npm for everything'))[0].choice, true);
    // a cuisine is not a reply language; a command is not a choice
    assert.equal(mentions(prepare(0, 'Loves Chinese food'))[0].choice, false);
    assert.equal(mentions(prepare(0, 'Run npm test before each commit'))[0].choice, false);
    assert.equal(mentions(prepare(0, 'Neovim is my editor'))[0].choice, true);
    assert.equal(mentions(prepare(0, 'Editor: VS Code'))[0].member, 'vscode');
    assert.notEqual(familyOf('npm'), undefined);
    assert.equal(familyOf('npm'), familyOf('pnpm'));
  });

  it('two sentence shapes choosing different members of one family contradict, and the evidence says why', () => {
    for (const pair of [
      ['Prefers pnpm over npm', 'Uses npm for everything'],
      ['Neovim is my editor', 'Editor: VS Code'],
      ['My default shell is zsh', 'Uses bash for everything'],
      ['Prefers replies in Chinese', 'Reply in English'],
    ]) {
      const f = pairFindings(pair);
      assert.equal(f.length, 1, pair.join(' / '));
      assert.equal(f[0].kind, 'contradiction', pair.join(' / '));
      assert.match(f[0].message, /different choices of one/);
    }
    const [f] = pairFindings(['Prefers pnpm over npm', 'Uses npm for everything']);
    assert.match(f.message, /JavaScript package manager: "pnpm" \(like\) vs "npm" \(use\)/);
  });

  it('choices with a scope or a subject on each side stay quiet, and so do lists', () => {
    for (const pair of [
      ['Uses tabs for indentation in Go', 'Uses spaces for indentation in Python'],
      ['The frontend uses npm', 'The backend uses pnpm'],
      ['Alice prefers vim', 'Bob prefers emacs'],
      ['Uses vim for notes', 'Uses emacs for code'],
      ['Uses Python for scripts', 'Uses Go for the API'],
      ['Uses npm and pnpm', 'Prefers pnpm'],
      ['Hates vim', 'Prefers emacs'],
      ['Run npm test before each commit', 'Prefers pnpm over npm'],
      // one can use several databases: "uses" is no choice there
      ['Uses Postgres', 'Uses MySQL for analytics'],
    ])
      assert.deepEqual(
        kinds(pair).filter((k) => k !== 'near-duplicate'),
        [],
        pair.join(' / '),
      );
  });

  it('a span that ends in a scope of its own is two things, not one value ("Ubuntu on the laptop" / "Fedora on the server")', () => {
    assert.deepEqual(kinds(['User runs Ubuntu on the laptop', 'User runs Fedora on the server']), []);
    assert.deepEqual(kinds(['Server runs Ubuntu', 'Server runs Debian']), ['contradiction']);
  });

  it('reads more update markers: "as of", "these days", "since", "replaced", Italian, German, Spanish, Chinese', () => {
    assert.equal(updateMarker('Ghostty replaced iTerm2 as the terminal')?.phrase, 'replaced');
    assert.equal(updateMarker('The pod is RUNNING as of 2026-06-27')?.weak, true);
    assert.equal(updateMarker('Uses zsh these days')?.weak, true);
    assert.equal(updateMarker('Lives in Lisbon since 2025')?.weak, true);
    assert.equal(updateMarker("L'utente non usa più Vim")?.retires, true);
    assert.equal(updateMarker('Benutzt Vim nicht mehr')?.retires, true);
    assert.equal(updateMarker('Ya no usa Vim')?.retires, true);
    assert.equal(updateMarker('Ora usa Zed')?.weak, true);
    assert.equal(updateMarker('目前是 Zed')?.weak, true);
    assert.equal(updateMarker('Editor: now Zed')?.phrase, 'now');
    // no marker: "for now", "right now", a plain statement, the English word "or"
    assert.equal(updateMarker('Use the staging box for now'), undefined);
    assert.equal(updateMarker('Uses vim or emacs'), undefined);
    assert.equal(updateMarker('Kiran lives in Whitefield.'), undefined);
  });

  it('a weak marker alone is no change; beside a contradiction it says which entry is newer', () => {
    // "as of" restates the state: no superseded finding
    assert.ok(
      !kinds([
        'RunPod pod running: Valentina-ComfyUI (id: 7cosuxdl). RTX 3090 in France.',
        'RunPod pod 7cosuxdl (Valentina-ComfyUI) is RUNNING as of 2026-06-27. RTX 3090, France.',
      ]).includes('superseded'),
    );
    const f = pairFindings(['Login shell: bash', 'Uses zsh these days']);
    assert.equal(f.length, 1);
    assert.equal(f[0].kind, 'superseded');
    assert.deepEqual(f[0].entries, ['e1', 'e2']);
    assert.match((f[0].evidence ?? []).join('\n') + f[0].message, /these days/);
  });

  it('a retiring marker agrees with an entry that negates the same thing, not with a negation elsewhere', () => {
    assert.deepEqual(
      kinds(['User is not vegetarian', 'User is no longer vegetarian']).filter((k) => k !== 'near-duplicate'),
      [],
    );
    // "不在 PATH" negates another clause than the one "已弃用" retires
    const f = kinds([
      {
        text: 'Codex CLI 装在 C:\\codex\\codex.exe（0.147.0-alpha），不在 PATH；auth 已配置',
        createdAt: '2026-08-12T10:00:00Z',
      },
      {
        text: 'Codex CLI：npm 全局 0.147.0 稳定版（PATH 内直接 `codex`）；旧 alpha（C:\\codex\\codex.exe）缺组件，已弃用；auth 已配置',
        createdAt: '2026-08-12T16:00:00Z',
      },
    ]);
    assert.deepEqual(f, ['superseded']);
  });

  it('two versions of one long entry with a value or an alternative swapped contradict; records of a list do not', () => {
    const v1 =
      'Build box: hostname=atlas, user=kim, Ubuntu Linux 6.8, 4 cores, 8GB RAM. Hermes profile: atlas, model qwen-3 via OpenRouter. Gateway running via systemd. 1 cron job (daily sync at 5AM).';
    const v2 =
      'Build box: hostname=atlas, user=kim, Fedora Linux 6.8, Hermes profile: atlas, model qwen-3 via OpenRouter. Gateway running via systemd. 12 cron jobs. Scripts in ~/.hermes/scripts/.';
    const [f] = pairFindings([v1, v2]);
    assert.equal(f?.kind, 'contradiction');
    assert.match(f.message, /one entry in two versions/);
    assert.match(f.message, /tokens in the same order/);
    // records of a list: every difference is values, in several places (runbook step 1 vs step 2)
    assert.deepEqual(
      kinds([
        'Runbook step 1: on host web-01 check the disk usage with df -h and rotate logs older than 4 days in /var/log/app-1',
        'Runbook step 2: on host web-02 check the disk usage with df -h and rotate logs older than 5 days in /var/log/app-2',
      ]).filter((k) => k === 'contradiction'),
      [],
    );
    // a version that adds and drops details, with a value cut short ("…200.1" of "…200.199": a prefix), agrees
    assert.deepEqual(
      kinds([
        'RunPod pod for ComfyUI (id 7cosux) on an RTX 3090 in France at 0.22/hr, reached with ssh -p 11309 from 213.144.200.199 only, restarted nightly',
        'RunPod pod for ComfyUI (id 7cosux) on an RTX 3090, France, at 0.22/hr, reached with ssh -p 11309 from 213.144.200.1, billed hourly',
      ]).filter((k) => k === 'contradiction'),
      [],
    );
  });

  it('two values that change places across the words they belong to contradict; across a list they agree', () => {
    const [f] = pairFindings([
      'Prod DB is 10.0.0.1 and staging DB is 10.0.0.2',
      'Prod DB is 10.0.0.2 and staging DB is 10.0.0.1',
    ]);
    assert.equal(f?.kind, 'contradiction');
    assert.match(f.message, /values swapped: "10\.0\.0\.1" and "10\.0\.0\.2" change places/);
    assert.deepEqual(
      kinds([
        'A股标准：红涨#ef4444 绿跌#22c55e，所有股票页统一。',
        'A股标准：绿涨#22c55e 红跌#ef4444，所有股票页统一。',
      ]),
      ['contradiction'],
    );
    assert.deepEqual(
      kinds(['Open ports 8080 and 9090', 'Open ports 9090 and 8080']).filter((k) => k === 'contradiction'),
      [],
    );
  });

  it('a name swapped while the other entry only adds details contradicts; a scope or a reworded name does not', () => {
    const [f] = pairFindings([
      '联通宽带，翻墙用途GPT+视频，机场选型要便宜档，倾向月付。',
      '电信宽带，翻墙用途GPT+视频。',
    ]);
    assert.equal(f?.kind, 'contradiction');
    assert.match(f.message, /"联通" vs "电信"/);
    for (const pair of [
      // after a scope: two repositories, not one value
      [
        'The deploy key for repo-a is stored in Vault under ops/keys',
        'The deploy key for repo-b is stored in Vault under ops/keys, rotated monthly',
      ],
      // one name reworded ("杀死" / "杀"; "Kepler.gl/L7" / "Kepler.gl and L7")
      [
        '绝对禁止 taskkill /F /IM python.exe → 杀死Agent自身！杀进程必须 taskkill /PID <pid>。资源排查用 ps aux。',
        '绝对禁止 taskkill /F /IM python.exe → 杀Agent自身！杀进程必须 taskkill /PID <pid>，排查用 ps aux。',
      ],
      [
        'Data Viz: Likes Kepler.gl/L7 for 3D maps. Uses adjustText for labels. Prefers concise dashboard labels.',
        'Data Viz: likes Kepler.gl and L7 for 3D maps; adjustText for labels.',
      ],
    ])
      assert.deepEqual(
        kinds(pair).filter((k) => k === 'contradiction'),
        [],
        pair.join(' / '),
      );
  });

  it('the same label with opposite values contradicts (Chinese words with one opposite character too)', () => {
    assert.equal(cjkAntonyms('长线', '短线'), true);
    assert.equal(cjkAntonyms('高频', '低频'), true);
    assert.equal(cjkAntonyms('长线', '短期'), false);
    const [f] = pairFindings(['投资:黄金积存中长线,年操作1-2次,低频。', '投资:黄金短线交易,每周操作多次。']);
    assert.equal(f?.kind, 'contradiction');
    assert.match(f.message, /the same label with opposite values: 投资: "长线" vs "短线"/);
    // a label of many facts needs a shared word; always/never turn a clause around, they are no values
    assert.deepEqual(
      kinds(['Schedule: early standup on Monday', 'Schedule: late dinner on Friday']).filter(
        (k) => k === 'contradiction',
      ),
      [],
    );
    assert.ok(
      !pairFindings([
        '**Never auto-commit**: Always wait for explicit user instruction before running `git commit` / `git push`.',
        '**Never auto-commit**: NEVER run `git commit`/`git push` without explicit instruction.',
      ]).some((x) => /opposite values/.test(x.message)),
    );
  });

  it('compares values as values: a number with its unit, a time of day', () => {
    assert.deepEqual(
      tokens('RAM 16 GB, timeout 30 minutes, digest at 8:45').map((t) => `${t.t}:${t.type}`),
      ['ram:word', '16gb:num', 'timeout:word', '30min:num', 'digest:word', '8:45:num'],
    );
    assert.equal(tokens('30min')[0].t, tokens('30 minutes')[0].t);
    assert.ok(!kinds(['The build box has 16 GB of RAM', 'The build box has 16GB of RAM']).includes('contradiction'));
    assert.deepEqual(kinds(['Session timeout is 30 minutes', 'Session timeout is 45 min']), ['contradiction']);
    assert.deepEqual(kinds(['Daily digest goes out at 8:45', 'Daily digest goes out at 9:15']), ['contradiction']);
  });

  it('two subjects of another family, a restarted choice, a verb with its object, a move and where one lives', () => {
    // another family differs on both sides: two subjects (the scoped look-alike in another shape)
    assert.deepEqual(kinds(['Go code uses tabs', 'Python code uses 4 spaces']), []);
    // "never use yarn, use pnpm": the negation's scope ends at the comma where a choice starts again
    assert.deepEqual(kinds(['Always use yarn', 'Never use yarn, use pnpm']), ['contradiction']);
    // a compound of the member is no other subject; "now" makes the second newer
    const [z] = pairFindings(['Uses zsh with oh-my-zsh', 'Uses fish shell now']);
    assert.equal(z?.kind, 'superseded');
    assert.deepEqual(z.entries, ['e1', 'e2']);
    // "switched the editor to Zed"
    assert.equal(updateMarker('Switched the editor to Zed')?.to, 'zed');
    assert.deepEqual(kinds(['Editor: Neovim', 'Switched the editor to Zed']), ['superseded']);
    // a move changes where one lives, for the same subject only
    assert.deepEqual(kinds(['User lives in Berlin', 'User moved to Lisbon in 2025']), ['superseded']);
    assert.deepEqual(kinds(['Kiran lives in Whitefield.', 'Priya moved to Electronic City.']), []);
    assert.deepEqual(kinds(['Kiran lived in Whitefield.', 'Kiran moved to Electronic City.']), []);
    assert.deepEqual(kinds(['User lives in Berlin', 'Moved the meeting to Friday']), []);
  });

  it('compares time zones by their UTC offsets (ICU data in Node), across sentence shapes', () => {
    assert.deepEqual(tzOffsets('europe/berlin'), [60, 120]);
    assert.deepEqual(tzOffsets('utc+8'), [480]);
    assert.equal(tzOffsets('nope/zone'), undefined);
    assert.equal(sameZone('asia/shanghai', 'utc+8'), true);
    assert.equal(sameZone('cet', 'europe/berlin'), true);
    // New York's winter offset is Chicago's summer one: two zones all the same
    assert.equal(sameZone('america/new_york', 'america/chicago'), false);
    // one zone in two spellings is no conflict; another zone in another sentence shape is
    assert.deepEqual(
      kinds(['Timezone: Asia/Shanghai', 'Timezone: UTC+8']).filter((k) => k === 'contradiction'),
      [],
    );
    assert.deepEqual(kinds(['User time zone is CET', 'Timezone: Europe/Berlin']), []);
    const [f] = pairFindings(['Lives in Berlin, time zone Europe/Berlin', 'Time zone: PST']);
    assert.equal(f?.kind, 'contradiction');
    assert.match(f.message, /different choices of one time zone/);
    // a time stated in a zone is no statement of the user's zone
    assert.deepEqual(kinds(['Digest at 9:00 UTC', 'Timezone: America/Chicago']), []);
  });
});
