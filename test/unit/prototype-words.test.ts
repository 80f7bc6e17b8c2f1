import * as assert from 'node:assert/strict';
import { lintEntries, type LintInput } from '../../sidecar/memory/lint';
import { familyOf, tzOffsets } from '../../sidecar/memory/lint/choices';
import { binaryOf, extractClaims } from '../../sidecar/memory/lint/claims';
import { canon } from '../../sidecar/memory/lint/text';
import { scanCommands } from '../../sidecar/risk';

/**
 * Words that are names of Object.prototype's members ("constructor", "__proto__", "toString") are
 * ordinary words in a memory and ordinary names in a Makefile: a lookup table that is a plain object
 * answered them with Object's own function (memory lint threw "t.t.includes is not a function" on any
 * entry saying "constructor", and read it as a time zone and a tool with a version command).
 */
describe('words that name Object.prototype members', () => {
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

  it('memory lint reads an entry that says "constructor" or "__proto__" like any other', () => {
    const texts = [
      'The service constructor takes the config path as its first argument',
      'The service constructor takes the config path as its first argument',
      'Never assign __proto__ or call hasOwnProperty on user config objects',
      'Call toString and valueOf only on checked values',
    ];
    const findings = lintEntries(mem(texts));
    const dup = findings.filter((f) => f.kind === 'duplicate');
    assert.equal(dup.length, 1, JSON.stringify(findings.map((f) => f.kind)));
    assert.deepEqual([...dup[0].entries].sort(), ['e1', 'e2']);
    for (const w of ['constructor', '__proto__', 'tostring', 'hasownproperty', 'valueof'])
      assert.equal(typeof canon(w), 'string', w);
  });

  it('"constructor" is neither a time zone nor a tool with a version command', () => {
    assert.equal(tzOffsets('constructor'), undefined);
    assert.equal(tzOffsets('__proto__'), undefined);
    assert.equal(familyOf('constructor'), undefined);
    assert.deepEqual(tzOffsets('pst'), [-480]);
    assert.deepEqual(
      extractClaims('The constructor v2 takes a path; uses constructor injection').filter((c) => c.kind !== 'path'),
      [],
    );
    assert.equal(binaryOf('constructor'), 'constructor');
    assert.equal(binaryOf('postgres'), 'psql');
  });

  it('a Makefile variable named __proto__ or constructor expands to its value, an unset one stays', () => {
    const make = [
      '__proto__ := .venv/bin/pip', // 1
      'install:', // 2
      '\t$(__proto__) install -r req.txt', // 3
      'other:', // 4
      '\t$(constructor) install -r req.txt', // 5
    ].join('\n');
    const hits = scanCommands('Makefile', make).map((c) => [c.line, c.class, c.text]);
    assert.deepEqual(hits, [[3, 'deps', '$(__proto__) install -r req.txt']]);
  });
});
