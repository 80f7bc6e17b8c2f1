import * as path from 'node:path';

/** Repository root (test/unit/helpers → ../../..). */
export const REPO = path.resolve(__dirname, '..', '..', '..');
/** Test fixtures in the repository (copies of the shared reference fixtures; see test/fixtures/README.md). */
export const FIXTURES = path.join(REPO, 'test', 'fixtures');
