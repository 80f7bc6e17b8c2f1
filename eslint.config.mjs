// ESLint flat config: typescript-eslint's recommended rules (syntax only, no type information, so a
// run stays fast on 2 cores), the layer rules of issue 10 (import/no-restricted-paths) and
// eslint-config-prettier last (Prettier owns layout; `npm run lint` runs `prettier --check` after
// ESLint). Import cycles are found by scripts/check-import-cycles.ts, also run by `npm run lint`:
// import/no-cycle took about 80% of a run (over a minute on a busy 2-core machine), it takes a second.
// Run: `npm run lint` (tsc + ESLint + cycles + Prettier) or `npx eslint .`.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import importPlugin from 'eslint-plugin-import';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** Files ESLint never reads: build output, dependencies, the code-server host, caches, fixtures. */
const IGNORES = [
  'out/**',
  '**/node_modules/**',
  'test/host/**',
  'test/.cache/**',
  'test/fixtures/**',
  'test/cases/**',
  'test-results/**',
  '.vscode-test/**',
  '.demo/**',
  'bench/.data/**',
  '**/*.vsix',
];

// ---------------------------------------------------------------------------------------------
// Layers (ARCHITECTURE.md "Layers"). Paths are relative to the repo root; `except` entries are
// relative to the zone's `from`.
// ---------------------------------------------------------------------------------------------

/** The front ends (extension/, webview-ui/) see the sidecar only through its protocol module. */
const FRONT_END_ZONE = {
  from: './sidecar',
  except: ['./protocol'],
  message:
    'The extension and the webviews import only sidecar/protocol (its schemas and pure modules: format.ts, ...): ' +
    'move what they need into the protocol, or ask the sidecar for it over JSON-RPC.',
};

/** sidecar/core reaches backends and stores only through their registries and interface types. */
const CORE_ZONES = [
  {
    from: './sidecar/cli',
    message: 'sidecar/core imports no CLI code: return data (e.g. next actions), the CLI renders it.',
  },
  {
    from: './sidecar/server',
    message: 'sidecar/core imports no server code: the servers call the core, never the other way round.',
  },
  {
    from: './sidecar/machine',
    except: ['./index.ts', './types.ts'],
    message:
      'sidecar/core reaches backends only through sidecar/machine/index.ts (the registry) and ' +
      'sidecar/machine/types.ts: add what you need to the backend interface.',
  },
  {
    from: './sidecar/memory',
    // ./ops: the memory operations (show/edit/remove/add/lint/diff) are store-agnostic: they open
    // stores through the registry and call the adapters' capabilities, so they belong with the
    // registry, not with a concrete store. They are not re-exported from index.ts because they import
    // it (openStore): a re-export would be an import cycle.
    except: ['./index.ts', './types.ts', './ops'],
    message:
      'sidecar/core reaches memory stores only through sidecar/memory/index.ts (the registry), ' +
      'sidecar/memory/types.ts and the store-agnostic sidecar/memory/ops: add what you need to the store interface.',
  },
];

/** Config blocks for the layer rules: one for the front ends, one for the core. */
function layerRules() {
  const rule = (zones) => ({ 'import/no-restricted-paths': ['error', { zones, basePath: import.meta.dirname }] });
  return [
    {
      files: ['extension/**/*.ts', 'webview-ui/**/*.ts'],
      rules: rule([
        { target: './extension/**', ...FRONT_END_ZONE },
        { target: './webview-ui/**', ...FRONT_END_ZONE },
      ]),
    },
    { files: ['sidecar/core/**/*.ts'], rules: rule(CORE_ZONES.map((z) => ({ target: './sidecar/core/**', ...z }))) },
  ];
}

export default defineConfig(
  { ignores: IGNORES },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mjs'],
    plugins: { import: importPlugin },
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    settings: {
      'import/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import/resolver': { node: { extensions: ['.ts', '.js', '.mjs', '.json'] } },
      'import/extensions': ['.ts', '.js', '.mjs'],
    },
    rules: {
      // a `let` read by a closure before its one assignment (cleanup handlers) cannot be a `const`
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_`-prefixed names are deliberately unused (callback parameters, destructured leftovers)
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrors: 'none',
          ignoreRestSiblings: true,
        },
      ],
      // `process.env = {...}` swaps Node's environment object for a plain one: later changes no longer
      // reach the real environment (os.homedir(), native code); restore key by key (test/unit/helpers/env.ts)
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "AssignmentExpression[left.type='MemberExpression'][left.object.name='process'][left.property.name='env']",
          message:
            'Do not replace process.env; set or delete its keys (tests: restoreEnv in test/unit/helpers/env.ts).',
        },
      ],
    },
  },
  {
    // tests and benches read JSON off the wire and poke at it: `any` there is deliberate
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Node globals (process, Buffer, __dirname, ...) in the scripts and the ESLint/esbuild configs
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  ...layerRules(),
  prettier,
);
