/**
 * Named agents (issue 15 item 2): agent add/list/remove/default through the real CLI and through
 * the protocol, --agent and the default agent on the other commands, the errors for an unknown name,
 * an ambiguous choice and a config.json that does not parse, and that config writes keep other keys.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { dispatch } from '../../sidecar/core/dispatch';
import { AgentKeepError } from '../../sidecar/core/errors';
import { resolveAgent } from '../../sidecar/core/agents';
import { buildSidecar, cliRunner, type RunResult } from './helpers/sidecar';

describe('named agents', function () {
  let tmp: string;
  let state: string;
  let a1: string;
  let a2: string;
  const { ak, json } = cliRunner(() => state);
  const configFile = (): string => path.join(state, 'config.json');

  /** A usage error: exit 2, one line on stderr matching `re`. */
  const usage = (r: RunResult, re: RegExp): void => {
    assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, re);
  };

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-agents-'));
    state = path.join(tmp, 'state');
    a1 = path.join(tmp, 'one');
    a2 = path.join(tmp, 'two');
    for (const a of [a1, a2]) {
      await fs.mkdir(path.join(a, 'memories'), { recursive: true });
      await fs.writeFile(path.join(a, 'memories', 'MEMORY.md'), `note of ${path.basename(a)}`);
      await fs.writeFile(path.join(a, 'file.txt'), path.basename(a));
    }
  });

  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('add / list / default / remove round trip; the first agent is the default; other config keys are kept', async () => {
    await fs.mkdir(state, { recursive: true });
    await fs.writeFile(configFile(), JSON.stringify({ sizeCapBytes: 123456789, retention: { keep: 7 } }));
    const one = await json('agent', 'add', 'one', '--target', `dir:${a1}`, '--store', `hermes:${a1}`);
    assert.deepEqual(one, {
      name: 'one',
      target: `dir:${a1}`,
      stores: [`hermes:${a1}`],
      failClosed: false,
      default: true,
    });
    const two = await json('agent', 'add', 'two', '--target', `dir:${a2}`, '--fail-closed');
    assert.equal(two.default, false);
    assert.equal(two.failClosed, true);
    const list = await json('agent', 'list');
    assert.deepEqual(
      list.agents.map((a: { name: string }) => a.name),
      ['one', 'two'],
    );
    assert.equal(list.default, 'one');
    assert.equal(list.configFile, configFile());
    const text = await ak('agent', 'list');
    assert.match(text.stdout, /^\*\s+one\s+dir:/m);

    const cfg = JSON.parse(await fs.readFile(configFile(), 'utf8'));
    assert.equal(cfg.sizeCapBytes, 123456789, 'other keys stay');
    assert.deepEqual(cfg.retention, { keep: 7 });
    assert.equal((await fs.stat(configFile())).mode & 0o777, 0o600);
    assert.deepEqual(
      (await fs.readdir(state)).filter((f) => f.includes('ak-tmp')),
      [],
      'no temp file left',
    );

    assert.equal((await json('agent', 'default', 'two')).default, true);
    assert.equal((await json('agent', 'list')).default, 'two');
    const rm = await json('agent', 'remove', 'two');
    assert.deepEqual(rm, { removed: 'two' }, 'removing the default leaves none');
    assert.equal(JSON.parse(await fs.readFile(configFile(), 'utf8')).defaultAgent, undefined);
  });

  it("commands use --agent, else the default agent, else the only one; --store replaces the agent's stores", async () => {
    await json('agent', 'add', 'one', '--target', `dir:${a1}`, '--store', `hermes:${a1}`);
    await json('agent', 'add', 'two', '--target', `dir:${a2}`);
    // no --target: the default agent (one), with its store captured
    const rp1 = await json('restore-point', 'create', '--label', 'default agent');
    assert.equal(rp1.target, `dir:${a1}`);
    assert.deepEqual(
      rp1.agent.map((c: { store: string }) => c.store),
      [`hermes:${a1}`],
    );
    const rp2 = await json('restore-point', 'create', '--agent', 'two');
    assert.equal(rp2.target, `dir:${a2}`);
    assert.deepEqual(
      (await json('restore-point', 'list', '--agent', 'two')).map((r: { id: string }) => r.id),
      [rp2.id],
    );
    const rp3 = await json('restore-point', 'create', '--agent', 'one', '--store', `hermes:${a2}`);
    assert.equal(rp3.target, `dir:${a1}`);
    assert.deepEqual(
      rp3.agent.map((c: { store: string }) => c.store),
      [`hermes:${a2}`],
      "--store replaces the agent's stores",
    );
    // memory diff takes the agent's target; an agent without stores compares what the restore point captured
    const md = await ak('memory', 'diff', '--from', rp2.id, '--agent', 'two');
    assert.equal(md.code, 0, md.stderr);
    assert.match(md.stdout, new RegExp(`Memory from restore point ${rp2.id} to now`));
    // memory commands take the agent's stores
    const mem = await json('memory', 'list');
    assert.equal(mem.stores.length, 2);
    assert.match(mem.stores[0].entries[0].text, /note of one/);
    // an agent without stores set: the stores found in its target (what its restore points capture)
    const found = await json('memory', 'list', '--agent', 'two');
    assert.deepEqual([...new Set(found.stores.map((f: { store: string }) => f.store))], [`hermes:${a2}`]);
    assert.match(found.stores[0].entries[0].text, /note of two/);
    await fs.rm(path.join(a2, 'memories'), { recursive: true });
    usage(
      await ak('memory', 'list', '--agent', 'two'),
      /agent two has no stores set, and none were found in its target/,
    );
    await fs.mkdir(path.join(a2, 'memories'));
    await fs.writeFile(path.join(a2, 'memories', 'MEMORY.md'), 'note of two');
    // an explicit --target still works and names no agent
    assert.equal((await json('restore-point', 'list', '--target', `dir:${a2}`)).length, 1);
    // the only agent left is used without a default
    await json('agent', 'remove', 'one');
    assert.equal((await json('restore-point', 'list')).length, 1);
    assert.equal((await json('restore-point', 'list'))[0].target, `dir:${a2}`);
  });

  it('ambiguity, an unknown name, --agent with --target and no agent at all are clear usage errors', async () => {
    usage(
      await ak('restore-point', 'list'),
      /restore-point list needs --target T or --agent NAME, and no agents are set up\. .*agentkeep agent add NAME --target T/,
    );
    usage(await ak('memory', 'list'), /memory list needs a store \(--store S or --agent NAME\)/);
    // two agents and no default (written by hand: agent add makes the first one the default)
    await fs.mkdir(state, { recursive: true });
    await fs.writeFile(
      configFile(),
      JSON.stringify({ agents: { one: { target: `dir:${a1}` }, two: { target: `dir:${a2}` } } }),
    );
    usage(
      await ak('restore-point', 'list'),
      /Several agents are set up \(one, two\) and none is the default.*--agent NAME.*agentkeep agent default one/,
    );
    const unknown = await ak('restore-point', 'list', '--agent', 'three', '--json');
    usage(unknown, /No agent named "three" in .*config\.json\. Known agents: one, two\./);
    assert.equal(JSON.parse(unknown.stdout).error.code, 'agent_not_found');
    usage(
      await ak('restore-point', 'list', '--agent', 'one', '--target', `dir:${a1}`),
      /Both an agent \(one\) and a target \(dir:.*\) were given/,
    );
    usage(
      await ak('agent', 'add', '9lives', '--target', `dir:${a1}`),
      /Bad agent name "9lives": an agent name starts with a letter/,
    );
    const again = await ak('agent', 'add', 'one', '--target', `dir:${a2}`);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /An agent named "one" exists already .*nothing was changed.*--replace/);
    assert.equal((await json('agent', 'add', 'one', '--target', `dir:${a2}`, '--replace')).target, `dir:${a2}`);
    const missing = await ak('agent', 'add', 'gone', '--target', `dir:${path.join(tmp, 'nope')}`);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /does not exist/);
    // a local store must exist too (as the target must); an ssh:// store is not dialled
    const nostore = path.join(tmp, 'does', 'not', 'exist');
    const ms = await ak('agent', 'add', 'gone', '--target', `dir:${a1}`, '--store', `hermes:${nostore}`, '--json');
    assert.equal(ms.code, 1);
    assert.equal(JSON.parse(ms.stdout).error.code, 'store_not_found');
    const mst = await ak('agent', 'add', 'gone', '--target', `dir:${a1}`, '--store', `hermes:${nostore}`);
    assert.match(
      mst.stderr,
      new RegExp(
        `The store hermes:${nostore} names ${nostore}, which does not exist; nothing was changed\\. Point --store at`,
      ),
    );
    assert.equal((await json('agent', 'list')).agents.filter((a: { name: string }) => a.name === 'gone').length, 0);
    const remote = await json(
      'agent',
      'add',
      'far',
      '--target',
      `dir:${a1}`,
      '--store',
      'hermes:ssh://root@192.0.2.1/root/.hermes',
    );
    assert.deepEqual(remote.stores, ['hermes:ssh://root@192.0.2.1/root/.hermes']);
    assert.equal((await ak('agent', 'remove', 'far')).code, 0);
    const rmUnknown = await ak('agent', 'remove', 'constructor');
    assert.equal(rmUnknown.code, 1);
    assert.match(rmUnknown.stderr, /No agent named "constructor".*Known agents: one, two/);
  });

  it('a config.json that does not parse is an error naming the file and changes nothing; an explicit --target still works', async () => {
    await fs.mkdir(state, { recursive: true });
    const broken = '{"agents": {"one": {"target": "dir:/x"},}}';
    await fs.writeFile(configFile(), broken);
    for (const args of [
      ['agent', 'list'],
      ['agent', 'add', 'two', '--target', `dir:${a2}`],
      ['agent', 'remove', 'one'],
      ['restore-point', 'list'],
    ]) {
      const r = await ak(...args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /config\.json is not valid JSON/);
    }
    assert.equal(await fs.readFile(configFile(), 'utf8'), broken, 'byte-identical');
    assert.equal((await json('restore-point', 'list', '--target', `dir:${a1}`)).length, 0);
    // a wrong field is named
    await fs.writeFile(configFile(), JSON.stringify({ agents: { one: { target: `dir:${a1}`, failclosed: true } } }));
    const r = await ak('agent', 'list');
    assert.match(r.stderr, /agents\.one: Unrecognized key.*failclosed/i);
    await fs.writeFile(configFile(), JSON.stringify({ agents: {}, defaultAgent: 'ghost' }));
    assert.match((await ak('agent', 'list')).stderr, /defaultAgent: names no agent in "agents" \(ghost\)/);
  });

  it('the protocol methods agent.list/add/remove/setDefault; parallel adds do not lose each other', async () => {
    const core = new Core({ stateDir: state });
    assert.deepEqual((await dispatch(core, 'agentkeep/agent.list', {})) as unknown, {
      agents: [],
      configFile: configFile(),
    });
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        dispatch(core, 'agentkeep/agent.add', { name: `a${i}`, target: `dir:${i % 2 ? a1 : a2}` }),
      ),
    );
    const list = (await dispatch(core, 'agentkeep/agent.list', {})) as {
      agents: Array<{ name: string }>;
      default: string;
    };
    assert.deepEqual(
      list.agents.map((a) => a.name),
      ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'],
    );
    assert.match(list.default, /^a\d$/);
    await dispatch(core, 'agentkeep/agent.setDefault', { name: 'a3' });
    const r = await resolveAgent(state, {});
    assert.deepEqual(r, { name: 'a3', target: `dir:${a1}`, failClosed: false, via: 'default' });
    assert.deepEqual(await resolveAgent(state, { target: 'dir:/elsewhere', stores: ['hermes:/h'] }), {
      target: 'dir:/elsewhere',
      stores: ['hermes:/h'],
      failClosed: false,
      via: 'target',
    });
    await assert.rejects(
      dispatch(core, 'agentkeep/agent.remove', { name: 'zz' }),
      (e: unknown) =>
        e instanceof AgentKeepError && e.code === 'agent_not_found' && /Known agents: a0, a1/.test(e.message),
    );
    await assert.rejects(
      dispatch(core, 'agentkeep/agent.add', { name: 'x', target: 'nope:/x' }),
      (e: unknown) => e instanceof AgentKeepError && e.kind === 'BadTarget',
    );
    await assert.rejects(
      dispatch(core, 'agentkeep/agent.add', { name: 'x', target: `dir:${a1}`, stores: ['letta:/x'] }),
      (e: unknown) => e instanceof AgentKeepError && e.kind === 'BadStore',
    );
  });
});
