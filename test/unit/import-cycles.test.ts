import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findImportCycles, runtimeImports } from '../../scripts/check-import-cycles';

describe('import cycles (scripts/check-import-cycles.ts, run by npm run lint)', () => {
  let root = '';
  const put = (rel: string, text: string): void => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  };
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'agentkeep-cycles-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('the repository has none', function () {
    this.timeout(120_000);
    assert.deepEqual(findImportCycles(), []);
  });

  it('finds a cycle through imports, export-from, a folder index and a self-import', () => {
    put('src/a.ts', "import { b } from './b';\nexport const a = (): number => b();\n");
    put('src/b.ts', "import { c } from './lib';\nexport const b = (): number => c;\n");
    put('src/lib/index.ts', "export { c } from './c';\n");
    put('src/lib/c.ts', "import { a } from '../a';\nexport const c = typeof a === 'function' ? 1 : 0;\n");
    put('src/self.ts', "import * as me from './self';\nexport const x = me;\n");
    put('src/ok.ts', "import { a } from './a';\nimport * as fs from 'node:fs';\nexport const ok = [a, fs];\n");
    assert.deepEqual(findImportCycles(['src'], root), [
      ['src/a.ts', 'src/b.ts', 'src/lib/index.ts', 'src/lib/c.ts', 'src/a.ts'],
      ['src/self.ts', 'src/self.ts'],
    ]);
  });

  it('leaves out imports that are erased at build time', () => {
    put('src/a.ts', "import type { B } from './b';\nexport interface A { b?: B }\n");
    put('src/b.ts', "import { type A } from './a';\nexport interface B { a?: A }\nexport type { A } from './a';\n");
    assert.deepEqual(findImportCycles(['src'], root), []);
    assert.deepEqual(runtimeImports('x.ts', "import { type A, b } from './a';\nexport * from './c';\n"), [
      './a',
      './c',
    ]);
    assert.deepEqual(runtimeImports('x.ts', "import def, { type A } from './a';\nimport './side';\n"), [
      './a',
      './side',
    ]);
  });
});
