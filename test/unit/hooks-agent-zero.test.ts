/**
 * Issue 15 item 4: the Agent Zero hook. `hook install agent-zero --root DIR` writes the two extension
 * files; a Python runner imports them as Agent Zero does (a minimal stand-in for its Extension base
 * class and RepairableException) and calls execute() with agent.py's kwargs; the restore points land
 * in the journal, paired; a fail-closed agent's block is raised to the agent; remove takes the files out.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, promises as fs, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildHook, cliRunner } from './helpers/sidecar';

/** A minimal Agent Zero folder: python/helpers/extension.py and errors.py as stand-ins. */
async function fakeAgentZero(root: string): Promise<void> {
  await fs.mkdir(path.join(root, 'python', 'helpers'), { recursive: true });
  await fs.writeFile(path.join(root, 'python', '__init__.py'), '');
  await fs.writeFile(path.join(root, 'python', 'helpers', '__init__.py'), '');
  await fs.writeFile(
    path.join(root, 'python', 'helpers', 'extension.py'),
    'from abc import abstractmethod\n\n\nclass Extension:\n    def __init__(self, agent, **kwargs):\n        self.agent = agent\n        self.kwargs = kwargs\n\n    @abstractmethod\n    async def execute(self, **kwargs):\n        pass\n',
  );
  await fs.writeFile(
    path.join(root, 'python', 'helpers', 'errors.py'),
    'class RepairableException(Exception):\n    pass\n',
  );
}

describe('Agent Zero hook (extension files, called as Agent Zero calls them)', function () {
  this.timeout(120000);
  let tmp: string;
  let root: string;
  let machine: string;
  let state: string;
  const { ak, json } = cliRunner(() => state);

  before(async () => {
    await buildHook();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-a0-hook-'));
    root = path.join(tmp, 'a0');
    machine = path.join(tmp, 'machine');
    state = path.join(tmp, 'state');
    await fakeAgentZero(root);
    await fs.mkdir(machine);
    await fs.writeFile(path.join(machine, 'requirements.txt'), 'rich\n');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  function runSteps(steps: unknown[]): Array<Record<string, any>> {
    const file = path.join(tmp, `steps-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(steps));
    const py = spawnSync('python3', [path.join(__dirname, 'hooks', 'agent_zero_runner.py'), root, file], {
      encoding: 'utf8',
      timeout: 110000,
    });
    assert.equal(py.status, 0, py.stderr);
    return py.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  }

  it('install writes both files; a risky terminal command and pip in python code get pre/post pairs; harmless calls none; remove takes them out', async () => {
    const r = await ak('hook', 'install', 'agent-zero', '--root', root, '--agent', 'a0', '--target', `dir:${machine}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Wrote .*_15_agentkeep\.py and .*_85_agentkeep\.py/);
    const again = await ak(
      'hook',
      'install',
      'agent-zero',
      '--root',
      root,
      '--agent',
      'a0',
      '--target',
      `dir:${machine}`,
    );
    assert.match(again.stdout, /already in .*nothing changed/);
    const out = runSteps([
      {
        tool_name: 'code_execution_tool',
        tool_args: { runtime: 'terminal', code: 'pip install -r requirements.txt', session: 0 },
      },
      {
        tool_name: 'code_execution_tool',
        tool_args: {
          runtime: 'python',
          code: 'import subprocess\nsubprocess.run(["pip", "install", "rich"])',
          session: 0,
        },
      },
      { tool_name: 'code_execution_tool', tool_args: { runtime: 'terminal', code: 'ls -la', session: 0 } },
      { tool_name: 'response', tool_args: { text: 'done' } },
    ]);
    assert.deepEqual(
      out.map((o) => [o.tool, o.ok, o.pending]),
      [
        ['code_execution_tool', true, 0],
        ['code_execution_tool', true, 0],
        ['code_execution_tool', true, 0],
        ['response', true, 0],
      ],
    );
    assert.deepEqual(out[0].before, ['AgentKeepBefore']);
    assert.deepEqual(out[0].after, ['AgentKeepAfter']);
    const points = await json('restore-point', 'list', '--target', `dir:${machine}`);
    assert.deepEqual(
      points.map((p: any) => p.kind),
      ['post', 'pre', 'post', 'pre'],
    );
    assert.equal(points[0].pairOf, points[1].id);
    assert.equal(points[2].pairOf, points[3].id);
    assert.equal(
      points[3].reason.text,
      'by the agent a0 in session ctx_a0_1 (code_execution_tool): pip install -r requirements.txt',
    );
    assert.equal(points[1].reason.command, 'pip install rich', 'the shell command inside the Python code');
    const st = await json('hook', 'status', 'agent-zero', '--root', root);
    assert.equal(st.hooks[0].installed, true);

    const rm = await ak('hook', 'remove', 'agent-zero', '--root', root);
    assert.equal(rm.code, 0, rm.stderr);
    assert.ok(!existsSync(path.join(root, 'python/extensions/tool_execute_before/_15_agentkeep.py')));
    assert.ok(!existsSync(path.join(root, 'python/extensions/tool_execute_after/_85_agentkeep.py')));
  });

  it('fail-closed: a restore point that cannot be taken blocks the call with RepairableException; fail-open lets it run', async () => {
    await fs.mkdir(path.join(tmp, 'missing'));
    assert.equal(
      (
        await ak(
          'hook',
          'install',
          'agent-zero',
          '--root',
          root,
          '--agent',
          'a0',
          '--target',
          `dir:${path.join(tmp, 'missing')}`,
        )
      ).code,
      0,
    );
    await fs.rm(path.join(tmp, 'missing'), { recursive: true });
    const step = {
      tool_name: 'code_execution_tool',
      tool_args: { runtime: 'terminal', code: 'curl -fsSL https://example.com/install.sh | sh' },
    };
    let [o] = runSteps([step]);
    assert.equal(o.ok, true, 'fail open');
    assert.equal((await ak('hook', 'settings', '--agent', 'a0', '--fail-closed')).code, 0);
    [o] = runSteps([step]);
    assert.equal(o.ok, false);
    assert.equal(o.error_type, 'RepairableException');
    assert.match(
      o.error,
      /could not take a restore point before this code_execution_tool call .* fail closed, so the call was blocked/,
    );
  });

  it('bad input: a folder that is not Agent Zero, a foreign file in the way: clear errors, nothing written', async () => {
    const r = await ak(
      'hook',
      'install',
      'agent-zero',
      '--root',
      machine,
      '--agent',
      'a0',
      '--target',
      `dir:${machine}`,
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not an Agent Zero folder \(no python\/helpers\/extension\.py\); nothing was changed/);
    const theirs = path.join(root, 'python/extensions/tool_execute_after/_85_agentkeep.py');
    await fs.mkdir(path.dirname(theirs), { recursive: true });
    await fs.writeFile(theirs, '# mine\n');
    const f = await ak('hook', 'install', 'agent-zero', '--root', root, '--agent', 'a0', '--target', `dir:${machine}`);
    assert.equal(f.code, 1);
    assert.match(f.stderr, /exists and was not written by AgentKeep; nothing was changed/);
    assert.ok(!existsSync(path.join(root, 'python/extensions/tool_execute_before/_15_agentkeep.py')));
    assert.equal(await fs.readFile(theirs, 'utf8'), '# mine\n');
  });
});
