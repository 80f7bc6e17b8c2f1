/** The CLI's stdio (./index.ts CliIO): its own module, so the launcher's slim create does not load the full CLI for it. */
import { createInterface } from 'node:readline/promises';
import type { CliIO } from './index';
import { writeLine } from './terminal';

/** The process's own stdio; what goes to a terminal passes terminalSafe (pipes and files get the bytes as they are). */
export function processIO(): CliIO {
  return {
    out: (s) => writeLine(process.stdout, s),
    err: (s) => writeLine(process.stderr, s),
    isTTY: Boolean(process.stdin.isTTY),
    confirm: async (q) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const a = await rl.question(`${q} [y/N] `);
        return /^y(es)?$/i.test(a.trim());
      } finally {
        rl.close();
      }
    },
  };
}
