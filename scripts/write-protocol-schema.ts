/**
 * Writes the JSON Schema of the whole protocol (protocolJsonSchema() from sidecar/protocol) to
 * sidecar/protocol/protocol.schema.json: 2-space JSON plus a newline. Run by `npm run build`;
 * test/unit/protocol.test.ts fails when the committed file is stale.
 * Usage: tsx scripts/write-protocol-schema.ts [--check]   (--check: exit 1 if the file is stale, write nothing)
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { protocolJsonSchema } from '../sidecar/protocol';

/** Path of the committed schema file. */
export const SCHEMA_FILE = path.resolve(__dirname, '..', 'sidecar', 'protocol', 'protocol.schema.json');

/** The exact text the schema file must hold. */
export function schemaText(): string {
  return JSON.stringify(protocolJsonSchema(), null, 2) + '\n';
}

async function main(): Promise<void> {
  const text = schemaText();
  if (process.argv.includes('--check')) {
    const cur = await fs.readFile(SCHEMA_FILE, 'utf8').catch(() => '');
    if (cur !== text) {
      process.stderr.write(`${path.relative(process.cwd(), SCHEMA_FILE)} is stale: run npm run build\n`);
      process.exitCode = 1;
    }
    return;
  }
  const tmp = `${SCHEMA_FILE}.${process.pid}.tmp`;
  await fs.writeFile(tmp, text);
  await fs.rename(tmp, SCHEMA_FILE);
  process.stdout.write(`wrote ${path.relative(process.cwd(), SCHEMA_FILE)}\n`);
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`write-protocol-schema: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
