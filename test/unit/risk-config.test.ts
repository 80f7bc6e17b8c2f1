/** Risky config files, the `risk eval` / `risk scan` CLI on the real bin, and the scanner's name list. */
import * as assert from 'node:assert/strict';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathInside, riskyConfigInScope } from '../../sidecar/protocol/configFiles';
import { riskyConfigFile } from '../../sidecar/risk';
import { COMMAND_NAMES, FAST_PATH_EXAMPLES, MAYBE_RISKY, MORE_NAMES } from '../../sidecar/risk/classify';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { FIXTURES, REPO } from './helpers/paths';

describe('riskyConfigFile', () => {
  it('flags the agent’s own files, secrets, manifests, lockfiles, compose, units, crontabs and apt sources', () => {
    const cases: Array<[string, string | undefined]> = [
      ['/home/me/.hermes/config.yaml', 'agent'],
      ['/home/me/.hermes/.env', 'secrets'],
      ['/home/me/.hermes/auth.json', 'secrets'],
      ['/home/me/.hermes/SOUL.md', 'agent'],
      ['/home/me/.hermes/memories/MEMORY.md', 'agent'],
      ['/home/me/.hermes/skills/research/arxiv/SKILL.md', 'agent'],
      ['/home/me/.hermes/skills/research/arxiv/scripts/fetch.py', 'agent'],
      ['/home/me/.hermes/cron/jobs.json', 'cron'],
      ['/a0/usr/settings.json', 'agent'],
      ['/home/me/agent-zero/usr/secrets.env', 'secrets'],
      ['C:\\proj\\.env', 'secrets'],
      ['/p/.env.production', 'secrets'],
      ['/p/requirements-dev.txt', 'dependencies'],
      ['/p/pyproject.toml', 'dependencies'],
      ['/p/package.json', 'dependencies'],
      ['/p/package-lock.json', 'lockfile'],
      ['/p/pnpm-lock.yaml', 'lockfile'],
      ['/p/uv.lock', 'lockfile'],
      ['/p/poetry.lock', 'lockfile'],
      ['/p/docker-compose.override.yml', 'containers'],
      ['/p/compose.yaml', 'containers'],
      ['/p/Containerfile', 'containers'],
      ['/etc/systemd/system/hermes.service', 'service'],
      ['/home/me/.config/systemd/user/hermes-gateway.service', 'service'],
      ['/p/deploy/agent.timer', 'service'],
      ['/etc/cron.d/backup', 'cron'],
      ['/p/crontab', 'cron'],
      ['/etc/apt/sources.list', 'apt-sources'],
      ['/etc/apt/sources.list.d/docker.list', 'apt-sources'],
      ['/etc/apt/sources.list.d/ubuntu.sources', 'apt-sources'],
      // not risky
      ['/p/.env.example', undefined],
      ['/p/src/index.ts', undefined],
      ['/p/README.md', undefined],
      ['/p/config.yaml', undefined],
      ['/p/docs/skills.md', undefined],
      ['/home/me/.hermes/logs/update.log', undefined],
      ['/p/settings.json', undefined],
    ];
    assert.deepEqual(
      cases.map(([p]) => [p, riskyConfigFile(p)?.kind]),
      cases,
    );
    const r = riskyConfigFile('/home/me/.hermes/config.yaml')!;
    assert.match(r.reason, /config\.yaml/);
  });

  it('treats files under a configured agent home as the agent’s own', () => {
    assert.equal(riskyConfigFile('/srv/agent-home/config.yaml'), undefined);
    assert.equal(riskyConfigFile('/srv/agent-home/config.yaml', ['/srv/agent-home'])?.kind, 'agent');
    assert.equal(riskyConfigFile('/srv/agent-home/skills/x/run.py', ['/srv/agent-home/'])?.kind, 'agent');
    assert.equal(riskyConfigFile('/srv/other/config.yaml', ['/srv/agent-home'])?.kind, undefined);
  });

  it('scopes to what a restore point covers: the target root or a store root (one rule for VS Code and LSP)', () => {
    const homes = ['/srv/agent/.hermes'];
    assert.equal(riskyConfigInScope('/srv/agent/app/package.json', homes, '/srv/agent')?.kind, 'dependencies');
    assert.equal(riskyConfigInScope('/home/me/other/package.json', homes, '/srv/agent'), undefined);
    assert.equal(riskyConfigInScope('/srv/agent/.hermes/config.yaml', homes, '/srv/agent-x')?.kind, 'agent');
    assert.equal(riskyConfigInScope('/home/me/other/package.json', homes)?.kind, 'dependencies', 'no local root: a VM');
    assert.equal(riskyConfigInScope('/srv/agent/README.md', homes, '/srv/agent'), undefined, 'not a config file');
    // as path.relative: a sibling with the same prefix is outside, `..` is resolved, the root itself is inside
    assert.equal(pathInside('/srv/agent-x/a', '/srv/agent'), false);
    assert.equal(pathInside('/srv/agent/../other/a', '/srv/agent'), false);
    assert.equal(pathInside('/srv/agent/./a/', '/srv/agent/'), true);
    assert.equal(pathInside('/srv/agent', '/srv/agent'), true);
    assert.equal(pathInside('/anything', '/'), true);
  });
});

describe('risk scanner name list', () => {
  it('names every command the classifier switches on, so the fast path never skips a risky command', () => {
    const src = readFileSync(path.join(REPO, 'sidecar', 'risk', 'classify.ts'), 'utf8');
    const body = src.slice(src.indexOf('export function classifyWords'), src.indexOf('const DOCKER_GLOBAL_ARG_OPTS'));
    const cases = [...body.matchAll(/case '([^']+)':/g)].map((m) => m[1]);
    assert.ok(cases.length > 60, `found ${cases.length} cases`);
    // shells and python only recurse (`bash -c "…"`, `python -m pip …`) into text that names the tool itself
    const dispatchers = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'python', 'python2', 'python3', 'py']);
    const missing = cases.filter((c) => !dispatchers.has(c) && !MAYBE_RISKY.test(FAST_PATH_EXAMPLES[c] ?? c));
    assert.deepEqual(missing, []);
    // contextual names (git, cp, sed, …) pass only in a risky form: each has an example that must pass
    for (const n of COMMAND_NAMES) assert.ok(MAYBE_RISKY.test(`sudo ${FAST_PATH_EXAMPLES[n] ?? `${n} x`}`), n);
    for (const safe of [
      'git status',
      'cp -r dist/* out',
      'sed -n 1p f',
      'find . -name x',
      'ls -la | tee build.log',
      'sudo ls',
      'mvn package',
    ])
      assert.ok(!MAYBE_RISKY.test(safe), safe);
    // classifyMore skips names it does not decide: its switch and wrapper cases are all in MORE_NAMES
    const more = src.slice(src.indexOf('function through('), src.indexOf('const DOCKER_GLOBAL_ARG_OPTS'));
    const moreCases = [...new Set([...more.matchAll(/case '([^']+)':/g)].map((m) => m[1]))];
    assert.deepEqual(
      moreCases.filter((c) => !MORE_NAMES.has(c)),
      [],
    );
    assert.ok(!MAYBE_RISKY.test('echo hello && ls -la'));
  });
});

describe('agentkeep risk eval / risk scan (real bin)', function () {
  let tmp: string;
  before(async function () {
    this.timeout(120000);
    await buildSidecar();
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-risk-cli-'));
  });
  after(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('prints precision and recall of the corpus overall, per class and per file kind; exit 0', async () => {
    const dir = path.join(FIXTURES, 'risk-corpus');
    const r = await runSidecar(['risk', 'eval', dir, path.join(dir, 'labels.json')]);
    assert.equal(r.code, 0, r.stderr);
    // 97 labels + 2 added with the config/system widening (setup.sh:23 tee into /etc, setup.sh:27 usermod)
    assert.match(r.stdout, /^21 files, 99 labelled commands/);
    assert.match(r.stdout, /^overall\s+1\.000\s+1\.000\s+99\s+0\s+0$/m);
    for (const k of [
      'class deps',
      'class toolchain',
      'class system',
      'class remote-code',
      'class config',
      'kind notebook',
      'kind compose',
      'kind workflow',
      'kind package-json',
      'kind devcontainer',
    ]) {
      assert.match(r.stdout, new RegExp(`^${k}\\s+\\d\\.\\d{3}\\s+\\d\\.\\d{3}`, 'm'), k);
    }
    const j = await runSidecar(['risk', 'eval', dir, path.join(dir, 'labels.json'), '--json']);
    const parsed = JSON.parse(j.stdout) as {
      overall: { precision: number; recall: number };
      byKind: Record<string, unknown>;
    };
    assert.ok(parsed.overall.precision >= 0.98 && parsed.overall.recall >= 0.98);
    assert.ok(parsed.byKind.dockerfile);
  });

  it('lists misses and false positives with the class found; reads the files named by the labels when FILES.txt is absent', async () => {
    await fs.writeFile(path.join(tmp, 'a.sh'), 'pip install x\nnpm i -g y\necho hi\n');
    await fs.writeFile(
      path.join(tmp, 'labels.json'),
      JSON.stringify([
        { file: 'a.sh', line: 2, end_line: 2, command: 'npm i -g y', class: 'deps' },
        { file: 'a.sh', line: 3, end_line: 3, command: 'echo hi', class: 'system' },
      ]),
    );
    const r = await runSidecar(['risk', 'eval', tmp, path.join(tmp, 'labels.json')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /Misses \(2\):\n {2}a\.sh:2 {2}deps \(found as toolchain\) {2}npm i -g y\n {2}a\.sh:3 {2}system {2}echo hi/,
    );
    assert.match(
      r.stdout,
      /False positives \(2\):\n {2}a\.sh:1 {2}deps {2}pip install x\n {2}a\.sh:2 {2}toolchain \(labelled deps\)/,
    );
  });

  it('fails with one clear line for a missing or malformed labels file', async () => {
    let r = await runSidecar(['risk', 'eval', tmp, path.join(tmp, 'nope.json')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^agentkeep: Cannot read labels .*nope\.json: no such file\..*labels\.json/);
    await fs.writeFile(path.join(tmp, 'bad.json'), '{"not": "a list"}');
    r = await runSidecar(['risk', 'eval', tmp, path.join(tmp, 'bad.json'), '--json']);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, 'invalid_params');
    r = await runSidecar(['risk', 'eval', tmp]);
    assert.equal(r.code, 2);
  });

  it('risk scan --json carries kind and risk for every file kind', async () => {
    const nb = path.join(tmp, 'n.ipynb');
    await fs.writeFile(
      nb,
      JSON.stringify({ cells: [{ cell_type: 'code', source: ['!pip install x\n', 'print(1)'] }] }, null, 1),
    );
    const wf = path.join(tmp, '.github', 'workflows', 'ci.yml');
    await fs.mkdir(path.dirname(wf), { recursive: true });
    await fs.writeFile(
      wf,
      'on: push\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: pnpm dlx x@1 && pnpm install\n',
    );
    const r = await runSidecar(['risk', 'scan', nb, wf, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const got = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    assert.deepEqual(
      got.map((x) => [x.kind, x.line, x.class, x.command]),
      [
        ['notebook', 6, 'deps', 'pip install x'],
        ['workflow', 6, 'remote-code', 'pnpm dlx x@1 && pnpm install'],
      ],
    );
    assert.match(
      String(got[1].risk),
      /^pnpm dlx x@1 \(remote-code: runs code fetched from the network\); also pnpm install \(deps: /,
    );
  });
});
