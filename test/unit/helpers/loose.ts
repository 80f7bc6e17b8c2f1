/**
 * Tests written against object files of their own (loose objects: `objects/<hh>/<sha256>`), e.g.
 * that delete or damage one object file, count orphaned object files after a kill, or sum the sizes
 * of the files under `objects/`: since every create packs its small objects (issue 14, packs.ts),
 * such a test keeps the loose layout, which a store of an older version has and a create of one new
 * object or of files above 1 MiB still writes, by raising the pack threshold
 * (AGENTKEEP_PACK_MIN_OBJECTS, inherited by the CLI processes it starts) for the tests of the
 * calling `describe`. The packed layout of the same behaviours is tested in dir-pack*.test.ts.
 */
const KEY = 'AGENTKEEP_PACK_MIN_OBJECTS';

/** Call inside a mocha `describe`: its tests store every object as a file of its own. */
export function looseObjects(): void {
  let saved: string | undefined;
  before(() => {
    saved = process.env[KEY];
    process.env[KEY] = '1000000000';
  });
  after(() => {
    if (saved === undefined) delete process.env[KEY];
    else process.env[KEY] = saved;
  });
}
