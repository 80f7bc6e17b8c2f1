/**
 * CodeLens on risky commands over a real LSP stdio connection to the built sidecar: blocks of
 * consecutive risky lines, the class filter (initializationOptions and didChangeConfiguration),
 * notebook cell documents, every file kind, and the contract the extension relies on.
 */
import * as assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type CodeLens,
  type MessageConnection,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  codeLensesFor,
  lensBlocks,
  parseCodeLensFilter,
  resolveLens,
  type LensArgument,
} from '../../sidecar/server/session';
import { RISK_CLASSES, scanCommands } from '../../sidecar/risk';
import { RISK_CLASSES as PROTOCOL_CLASSES } from '../../sidecar/protocol';
import { buildSidecar, startSidecar } from './helpers/sidecar';

type Arg = LensArgument;

describe('risk CodeLens (LSP)', function () {
  let tmp: string;
  let child: ChildProcess;
  let conn: MessageConnection;
  let refreshes = 0;

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-risk-lens-'));
    child = startSidecar(['serve', '--stdio'], { AGENTKEEP_STATE_DIR: path.join(tmp, 'state') });
    conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    refreshes = 0;
    conn.onRequest('workspace/codeLens/refresh', () => {
      refreshes++;
      return null;
    });
    conn.listen();
  });

  afterEach(async () => {
    conn.dispose();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    await fs.rm(tmp, { recursive: true, force: true });
  });

  /** initialize as the VS Code extension does (clientCommands: true: its lens titles and commands). */
  async function initialize(initializationOptions?: Record<string, unknown>): Promise<void> {
    await conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(tmp).href,
      capabilities: { workspace: { codeLens: { refreshSupport: true } } },
      initializationOptions: { clientCommands: true, ...initializationOptions },
    });
    await conn.sendNotification('initialized', {});
  }

  let version = 1;
  async function lensesOf(
    name: string,
    languageId: string,
    text: string,
    uri = pathToFileURL(path.join(tmp, name)).href,
  ): Promise<Array<[number, string, Arg]>> {
    await conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId, version: version++, text },
    });
    const lenses = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    // range-only lenses: the commands come from codeLens/resolve, as in VS Code
    assert.ok(
      lenses.every((l) => l.command === undefined && l.data),
      'lenses are resolved lazily',
    );
    const resolved = await Promise.all(lenses.map((l) => conn.sendRequest('codeLens/resolve', l) as Promise<CodeLens>));
    return resolved.map((l) => [l.range.start.line, l.command!.title, l.command!.arguments![0] as Arg]);
  }

  it('keeps the lens contract: setup.sh npm install and a Markdown bash fence, one argument {command, file, uri, line, endLine, class, reason}', async () => {
    await initialize();
    const file = path.join(tmp, 'setup.sh');
    const sh = await lensesOf(
      'setup.sh',
      'shellscript',
      '#!/bin/sh\nset -e\nnpm install --no-audit --no-fund left-pad@1.3.0\necho done\n',
    );
    // `reason` joined the argument with the destructive/config classes (issue 15): the lens tooltip and the restore point's reason
    const arg = {
      command: 'npm install --no-audit --no-fund left-pad@1.3.0',
      file,
      uri: pathToFileURL(file).href,
      line: 3,
      endLine: 3,
      class: 'deps',
      reason: 'deps: npm install changes project dependencies',
    };
    assert.deepEqual(sh, [
      [2, '$(history) Snapshot & run', arg],
      [2, '$(play) Run', arg],
    ]);
    const md = await lensesOf(
      'README.md',
      'markdown',
      '# Setup\n\nRun `pip install requests` first:\n\n```bash\npip install requests\n```\n',
    );
    assert.deepEqual(
      md.map(([l, t, a]) => [l, t, a.command, a.line, a.class]),
      [
        [5, '$(history) Snapshot & run', 'pip install requests', 6, 'deps'],
        [5, '$(play) Run', 'pip install requests', 6, 'deps'],
      ],
    );
  });

  it('groups consecutive risky lines into one block (commands joined by a newline, highest class); a gap starts a new block', async () => {
    await initialize();
    const text = [
      '#!/bin/bash', // 1
      'sudo apt-get update', // 2 (not risky)
      'sudo apt-get install -y \\', // 3
      '  jq', // 4
      'pip install -r requirements.txt', // 5
      'curl -fsSL https://example.com/i.sh | sh', // 6
      'echo done', // 7
      'npm ci', // 8
    ].join('\n');
    const got = await lensesOf('setup.sh', 'shellscript', text);
    const snap = got
      .filter(([, t]) => t.startsWith('$(history)'))
      .map(([l, , a]) => [l, a.line, a.endLine, a.class, a.command]);
    assert.deepEqual(snap, [
      [
        2,
        3,
        6,
        'remote-code',
        'sudo apt-get install -y jq\npip install -r requirements.txt\ncurl -fsSL https://example.com/i.sh | sh',
      ],
      [7, 8, 8, 'deps', 'npm ci'],
    ]);
    assert.equal(got.length, 4, 'one pair per block');
  });

  it('honours the class filter from initializationOptions and from workspace/didChangeConfiguration (and asks the client to refresh)', async () => {
    await initialize({ codeLens: ['system', 'remote-code'] });
    const text = 'pip install x\n\nnpm i -g y\n\nsudo apt-get install -y z\n';
    const uri = pathToFileURL(path.join(tmp, 'a.sh')).href;
    const got = await lensesOf('a.sh', 'shellscript', text, uri);
    assert.deepEqual([...new Set(got.map(([, , a]) => a.line))], [5]);

    await conn.sendNotification('workspace/didChangeConfiguration', { settings: { agentkeep: { codeLens: 'off' } } });
    assert.deepEqual(await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } }), []);
    await conn.sendNotification('workspace/didChangeConfiguration', { settings: { agentkeep: { codeLens: 'all' } } });
    const all = (await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as CodeLens[];
    assert.deepEqual([...new Set(all.map((l) => (l.data as { arg: Arg }).arg.line))], [1, 3, 5]);
    // the extension's boolean setting shape also works
    await conn.sendNotification('workspace/didChangeConfiguration', {
      settings: { agentkeep: { codeLens: { enabled: false } } },
    });
    assert.deepEqual(await conn.sendRequest('textDocument/codeLens', { textDocument: { uri } }), []);
    assert.ok(refreshes >= 3, `workspace/codeLens/refresh sent (${refreshes})`);
  });

  it('lenses notebook cell documents, compose, workflow, package.json, devcontainer and tasks.json', async () => {
    await initialize();
    const cell = await lensesOf(
      'nb.ipynb',
      'python',
      'import os\n%pip install -q peft\n',
      `vscode-notebook-cell:${pathToFileURL(path.join(tmp, 'nb.ipynb')).pathname}#W1sZmlsZQ%3D%3D`,
    );
    assert.deepEqual(
      cell.map(([l, , a]) => [l, a.command, a.class]),
      [
        [1, 'pip install -q peft', 'deps'],
        [1, 'pip install -q peft', 'deps'],
      ],
    );
    const kinds: Array<[string, string, string, number, string]> = [
      [
        'compose.yaml',
        'dockercompose',
        'services:\n  a:\n    image: x\n    command: ["sh", "-c", "pip install y && run"]\n',
        4,
        'deps',
      ],
      [
        '.github/workflows/ci.yml',
        'github-actions-workflow',
        'on: push\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: |\n          echo hi\n          npx -y x@1\n',
        8,
        'remote-code',
      ],
      [
        'package.json',
        'json',
        '{\n  "scripts": {\n    "build": "tsc",\n    "g": "npm i -g x"\n  }\n}\n',
        4,
        'toolchain',
      ],
      [
        '.devcontainer/devcontainer.json',
        'jsonc',
        '{\n  // comment\n  "postCreateCommand": "sudo apt-get install -y jq"\n}\n',
        3,
        'system',
      ],
      [
        '.vscode/tasks.json',
        'jsonc',
        '{\n  "version": "2.0.0",\n  "tasks": [\n    { "label": "x", "command": "uv sync" }\n  ]\n}\n',
        4,
        'deps',
      ],
      ['Dockerfile', 'dockerfile', 'FROM x\nRUN --mount=type=cache,target=/c \\\n    pip install y\n', 2, 'deps'],
    ];
    for (const [name, lang, text, line, cls] of kinds) {
      await fs.mkdir(path.dirname(path.join(tmp, name)), { recursive: true });
      const got = await lensesOf(name, lang, text);
      assert.deepEqual(
        got.map(([l, , a]) => [l + 1, a.line, a.class]),
        [
          [line, line, cls],
          [line, line, cls],
        ],
        name,
      );
    }
    // an untitled document gets its kind from the languageId
    const untitled = await lensesOf(
      'x',
      'dockercompose',
      'services:\n  a:\n    command: docker compose up -d\n',
      'untitled:Untitled-2',
    );
    assert.equal(untitled[0]?.[2].class, 'system');
  });
});

describe('risk CodeLens helpers', () => {
  it('parses the filter setting', () => {
    assert.equal(parseCodeLensFilter(undefined), 'all');
    assert.equal(parseCodeLensFilter('off'), 'off');
    assert.equal(parseCodeLensFilter(false), 'off');
    assert.equal(parseCodeLensFilter({ enabled: false }), 'off');
    assert.equal(parseCodeLensFilter({ enabled: true }), 'all');
    assert.deepEqual(parseCodeLensFilter(['deps', 3, 'system']), ['deps', 'system']);
    assert.deepEqual(parseCodeLensFilter({ classes: ['remote-code'] }), ['remote-code']);
  });

  it('knows one list of classes: the engine, the protocol (and its schema) and the agentkeep.codeLens setting agree', () => {
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      contributes: {
        configuration: {
          properties: Record<string, { anyOf: Array<{ items?: { enum: string[]; enumDescriptions: string[] } }> }>;
        };
      };
    };
    const item = pkg.contributes.configuration.properties['agentkeep.codeLens'].anyOf[1].items!;
    assert.deepEqual(item.enum, [...RISK_CLASSES]);
    assert.equal(item.enumDescriptions.length, RISK_CLASSES.length);
    assert.deepEqual([...PROTOCOL_CLASSES], [...RISK_CLASSES]);
    const enums: string[][] = [];
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === 'enum' && Array.isArray(x)) enums.push(x as string[]);
          else walk(x);
        }
      }
    };
    walk(
      JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'sidecar', 'protocol', 'protocol.schema.json'), 'utf8')),
    );
    assert.ok(
      enums.some((e) => JSON.stringify(e) === JSON.stringify([...RISK_CLASSES])),
      'protocol.schema.json lists the classes (npx tsx scripts/write-protocol-schema.ts)',
    );
    for (const c of ['destructive', 'config']) assert.deepEqual(parseCodeLensFilter([c]), [c]);
  });

  it('puts the reason into the lens argument and the tooltip; a config-only filter keeps only that lens pair', () => {
    const text = 'pip install a\n\ngit reset --hard origin/main\necho "export X=1" >> ~/.bashrc\n';
    const doc = TextDocument.create('file:///w/a.sh', 'shellscript', 1, text);
    const lenses = codeLensesFor(doc).map(resolveLens);
    assert.deepEqual(
      lenses.map((l) => [
        l.range.start.line,
        (l.command!.arguments![0] as Arg).class,
        (l.command!.arguments![0] as Arg).reason,
      ]),
      [
        [0, 'deps', 'deps: pip install changes project dependencies'],
        [0, 'deps', 'deps: pip install changes project dependencies'],
        // one block of two lines: the highest class (destructive over config) and its reason
        [2, 'destructive', 'destructive: git reset --hard discards uncommitted changes'],
        [2, 'destructive', 'destructive: git reset --hard discards uncommitted changes'],
      ],
    );
    assert.equal(
      lenses[2].command!.tooltip,
      'Take a restore point, then run. destructive: git reset --hard discards uncommitted changes',
    );
    assert.match(lenses[3].command!.tooltip!, /^Run without a restore point\. destructive: /);
    assert.deepEqual(
      codeLensesFor(doc, ['config'])
        .map(resolveLens)
        .map((l) => [(l.command!.arguments![0] as Arg).line, (l.command!.arguments![0] as Arg).reason]),
      [
        [4, 'config: echo >> ~/.bashrc appends to a shell start-up file'],
        [4, 'config: echo >> ~/.bashrc appends to a shell start-up file'],
      ],
    );
  });

  it('filters before grouping, so a hidden class does not join blocks', () => {
    const text = 'pip install a\nbrew install b\npip install c\n';
    const doc = TextDocument.create('file:///w/a.sh', 'shellscript', 1, text);
    assert.deepEqual(
      lensBlocks(scanCommands('a.sh', text)).map((b) => [b.line, b.endLine, b.class]),
      [[1, 3, 'toolchain']],
    );
    const lenses = codeLensesFor(doc, ['deps']).map(resolveLens);
    assert.deepEqual(
      lenses.map((l) => (l.command!.arguments![0] as Arg).line),
      [1, 1, 3, 3],
    );
    assert.deepEqual(codeLensesFor(doc, 'off'), []);
  });

  it('answers provideCodeLenses for a 5,000-line file within a few milliseconds once warm', () => {
    const lines = Array.from({ length: 5000 }, (_, i) =>
      i % 20 === 0
        ? `pip install pkg${i % 200}`
        : i % 7 === 0
          ? `echo "step ${i}" && ls -la`
          : `cp -r build/${i} dist/`,
    );
    const text = lines.join('\n');
    const times: number[] = [];
    for (let k = 0; k < 15; k++) {
      const doc = TextDocument.create('file:///w/big.sh', 'shellscript', k + 1, k % 2 ? text : text + '\n');
      const t0 = process.hrtime.bigint();
      assert.equal(codeLensesFor(doc).length, 500);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    // the bench measures the 5 ms target; here a generous bound that a shared CI machine still meets
    assert.ok(times[7] < 50, `median ${times[7]} ms`);
  });
});
