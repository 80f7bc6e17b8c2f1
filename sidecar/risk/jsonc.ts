/**
 * JSON-with-comments trees with source offsets (for the line numbers of package.json,
 * devcontainer.json, tasks.json and .ipynb values), on top of `jsonc-parser` (VS Code's own JSONC
 * parser): `//` and `/* *\/` comments and trailing commas are accepted, as in VS Code. Pure.
 */
import { parseTree, type Node, type ParseError } from 'jsonc-parser';

export type JsonNode =
  | {
      type: 'object';
      offset: number;
      length: number;
      props: Array<{ key: string; keyOffset: number; value: JsonNode }>;
    }
  | { type: 'array'; offset: number; length: number; items: JsonNode[] }
  | { type: 'string'; offset: number; length: number; value: string }
  | { type: 'number' | 'boolean' | 'null'; offset: number; length: number; value: number | boolean | null };

function convert(n: Node): JsonNode | undefined {
  switch (n.type) {
    case 'object': {
      const props: Array<{ key: string; keyOffset: number; value: JsonNode }> = [];
      for (const p of n.children ?? []) {
        const [k, v] = p.children ?? [];
        const value = v && convert(v);
        if (!k || typeof k.value !== 'string' || !value) return undefined;
        props.push({ key: k.value, keyOffset: k.offset, value });
      }
      return { type: 'object', offset: n.offset, length: n.length, props };
    }
    case 'array': {
      const items: JsonNode[] = [];
      for (const c of n.children ?? []) {
        const v = convert(c);
        if (!v) return undefined;
        items.push(v);
      }
      return { type: 'array', offset: n.offset, length: n.length, items };
    }
    case 'string':
      return { type: 'string', offset: n.offset, length: n.length, value: String(n.value) };
    case 'number':
    case 'boolean':
    case 'null':
      return { type: n.type, offset: n.offset, length: n.length, value: n.value as number | boolean | null };
    default:
      return undefined;
  }
}

/**
 * Parse JSONC text into a tree with offsets; undefined when it does not parse cleanly, or nests so
 * deep (thousands of levels) that the recursive parse runs out of stack.
 */
export function parseJsonc(text: string): JsonNode | undefined {
  try {
    const errors: ParseError[] = [];
    const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
    if (!root || errors.length > 0) return undefined;
    return convert(root);
  } catch (e) {
    if (e instanceof RangeError) return undefined; // Maximum call stack size exceeded
    throw e;
  }
}
