/**
 * `agentkeep hook status` without a kind or --home, and `hook install` into a folder that is not the
 * agent's: real CLI processes with their own HOME (no ~/.hermes there) and state dir.
 */
import * as assert from 'node:assert/strict';
import { existsSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildHook, runSidecar, type RunResult } from './helpers/sidecar';

describe('hook status (bare) and hook install into the wrong folder', function () {
  this.timeout(120000);
  let tmp: string;
  let state: string;
  let userHome: string;
  let hermesHome: string;
  /** The CLI with HOME = a folder without .hermes, HERMES_HOME unset. */
  const ak = (...args: string[]): Promise<RunResult> =>
    runSidecar(['--state-dir', state, ...args], { HOME: userHome, HERMES_HOME: undefined });

  before(async () => {
    await buildHook();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-hookstatus-'));
    state = path.join(tmp, 'state');
    userHome = path.join(tmp, 'user');
    hermesHome = path.join(tmp, 'hermes-elsewhere');
    await fs.mkdir(userHome);
    await fs.mkdir(path.join(hermesHome, 'memories'), { recursive: true });
    await fs.writeFile(path.join(hermesHome, 'config.yaml'), 'model:\n  default: a\n');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('no ~/.hermes and nothing installed: exit 0, one line saying so and how to name a home (text and JSON)', async () => {
    const r = await ak('hook', 'status');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.ok(
      r.stdout.startsWith(
        `hermes: no Hermes home at ${path.join(userHome, '.hermes')} and no Hermes hooks installed with the state dir ${state}. ` +
          'Give --home DIR for a Hermes home elsewhere',
      ),
      r.stdout,
    );
    assert.match(r.stdout, /No agents set up yet\./);
    const j = await ak('hook', 'status', '--json');
    assert.equal(j.code, 0, j.stderr);
    const out = JSON.parse(j.stdout);
    assert.deepEqual(out.hooks, []);
    assert.match(out.notes[0], /^hermes: no Hermes home at /);
  });

  it('no ~/.hermes but hooks installed into another home: bare status reports that home (exit 0)', async () => {
    const inst = await ak('hook', 'install', 'hermes', '--home', hermesHome);
    assert.equal(inst.code, 0, inst.stderr);
    const r = await ak('hook', 'status');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^hermes: AgentKeep hooks in ${path.join(hermesHome, 'config.yaml')}:`));
    assert.match(r.stdout, /pre_tool_call\s+terminal\s+not yet approved/);
    const out = JSON.parse((await ak('hook', 'status', '--json')).stdout);
    assert.deepEqual(
      out.hooks.map((h: any) => [h.kind, h.location, h.installed, h.entries.length]),
      [['hermes', path.join(hermesHome, 'config.yaml'), true, 6]],
    );
    assert.equal(out.notes, undefined);
    // with ~/.hermes there too (no hooks in it): both are reported
    await fs.mkdir(path.join(userHome, '.hermes'));
    await fs.writeFile(path.join(userHome, '.hermes', 'config.yaml'), 'model: {}\n');
    const both = JSON.parse((await ak('hook', 'status', '--json')).stdout);
    assert.deepEqual(
      both.hooks.map((h: any) => [h.location, h.installed]).sort(),
      [
        [path.join(hermesHome, 'config.yaml'), true],
        [path.join(userHome, '.hermes', 'config.yaml'), false],
      ].sort(),
    );
    // after remove, the record is gone: only ~/.hermes is left
    assert.equal((await ak('hook', 'remove', 'hermes', '--home', hermesHome)).code, 0);
    const after = JSON.parse((await ak('hook', 'status', '--json')).stdout);
    assert.deepEqual(
      after.hooks.map((h: any) => h.location),
      [path.join(userHome, '.hermes', 'config.yaml')],
    );
  });

  it('a home hooks were installed into lost its config.yaml: reported as broken (exit 1), the rest still shown', async () => {
    assert.equal((await ak('hook', 'install', 'hermes', '--home', hermesHome)).code, 0);
    await fs.rm(path.join(hermesHome, 'config.yaml'));
    const r = await ak('hook', 'status');
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        `^hermes: ${hermesHome}: AgentKeep's hooks were installed here with this state dir, but ${hermesHome} has no config\\.yaml\\.`,
      ),
    );
    assert.match(r.stdout, /Agents:\n.*\nhermes /);
  });

  it('hook status hermes (the kind named) without ~/.hermes is still an error naming --home', async () => {
    const r = await ak('hook', 'status', 'hermes');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /No Hermes home at .*\.hermes: no such directory.*--home DIR/);
  });

  it('install into a folder that is not a Hermes home says so first, even with a default agent set up (no agent add advice); agent add refuses it as a Hermes store', async () => {
    const tree = path.join(tmp, 'tree');
    const notHome = path.join(tmp, 'not-hermes');
    await fs.mkdir(tree);
    await fs.mkdir(notHome);
    assert.equal((await ak('agent', 'add', 'a1', '--target', `dir:${tree}`)).code, 0);
    const r = await ak('hook', 'install', 'hermes', '--home', notHome);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr.trimEnd(),
      `agentkeep: ${notHome} is not a Hermes home (no config.yaml, memories/ or state.db); nothing was changed. ` +
        'Give the folder Hermes uses (HERMES_HOME, usually ~/.hermes) with --home DIR.',
    );
    assert.deepEqual(await fs.readdir(notHome), [], 'nothing written there');
    // and an agent for it is refused too: its store is no Hermes home
    const add = await ak('agent', 'add', 'nh', '--target', `dir:${notHome}`, '--store', `hermes:${notHome}`);
    assert.equal(add.code, 1);
    assert.equal(
      add.stderr.trimEnd(),
      `agentkeep: The store hermes:${notHome}: Not a Hermes home: no memories/ or config.yaml in ${notHome}; ` +
        'nothing was changed. Point at the HERMES_HOME, usually ~/.hermes.',
    );
    assert.doesNotMatch((await ak('agent', 'list')).stdout, /\bnh\b/);
    // the same for Agent Zero: the folder is checked before the agent
    const a0 = await ak('hook', 'install', 'agent-zero', '--root', notHome);
    assert.equal(a0.code, 1);
    assert.match(a0.stderr, /is not an Agent Zero folder \(no python\/helpers\/extension\.py\); nothing was changed/);
    assert.doesNotMatch(a0.stderr, /agent add/);
    assert.ok(!existsSync(path.join(notHome, 'python')));
  });
  it('an empty --home or --root is a usage error (exit 2) naming the option; nothing is installed (QA: --home "" meant the current folder)', async () => {
    for (const args of [
      ['hook', 'install', 'hermes', '--home', ''],
      ['hook', 'install', 'agent-zero', '--root', ' '],
      ['hook', 'remove', 'hermes', '--home', ''],
      ['hook', 'status', '--home', ''],
    ]) {
      const r = await ak(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /Invalid --(home|root): it is empty\./);
      assert.match(r.stderr, /absolute path/);
    }
    const agents = await ak('agent', 'list', '--json');
    assert.equal(agents.code, 0, agents.stderr);
    assert.deepEqual(JSON.parse(agents.stdout).agents, []);
  });
});
