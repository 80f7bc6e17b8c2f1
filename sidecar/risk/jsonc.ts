/**
 * A small JSON-with-comments parser that keeps source offsets (for line numbers of package.json,
 * devcontainer.json, tasks.json and .ipynb values). Accepts `//` and `/* *\/` comments and trailing
 * commas, like VS Code's JSONC. Pure; returns undefined for text that is not (JSONC) JSON.
 *
 * (jsonc-parser would do, but its UMD entry does not bundle with esbuild's default main fields.)
 */

export type JsonNode =
  | { type: 'object'; offset: number; length: number; props: Array<{ key: string; keyOffset: number; value: JsonNode }> }
  | { type: 'array'; offset: number; length: number; items: JsonNode[] }
  | { type: 'string'; offset: number; length: number; value: string }
  | { type: 'number' | 'boolean' | 'null'; offset: number; length: number; value: number | boolean | null };

class ParseError extends Error {}

/** Parse JSONC text into a tree with offsets; undefined when it does not parse. */
export function parseJsonc(text: string): JsonNode | undefined {
  let i = 0;
  const fail = (): never => {
    throw new ParseError(`bad JSON at ${i}`);
  };
  const skip = (): void => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 9 || c === 10 || c === 13 || c === 0xfeff) i++;
      else if (c === 47 && text[i + 1] === '/') {
        const e = text.indexOf('\n', i);
        i = e < 0 ? text.length : e + 1;
      } else if (c === 47 && text[i + 1] === '*') {
        const e = text.indexOf('*/', i + 2);
        if (e < 0) fail();
        i = e + 2;
      } else return;
    }
  };
  const str = (): { value: string; offset: number; length: number } => {
    const start = i;
    i++;
    let out = '';
    for (;;) {
      if (i >= text.length) fail();
      const c = text[i];
      if (c === '"') {
        i++;
        return { value: out, offset: start, length: i - start };
      }
      if (c === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail();
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else {
          const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '/': '/', '\\': '\\', '"': '"' };
          if (!(e in map)) fail();
          out += map[e];
          i += 2;
        }
        continue;
      }
      out += c;
      i++;
    }
  };
  const value = (depth: number): JsonNode => {
    if (depth > 200) fail();
    skip();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const props: Array<{ key: string; keyOffset: number; value: JsonNode }> = [];
      for (;;) {
        skip();
        if (text[i] === '}') {
          i++;
          return { type: 'object', offset: start, length: i - start, props };
        }
        if (text[i] !== '"') fail();
        const k = str();
        skip();
        if (text[i] !== ':') fail();
        i++;
        props.push({ key: k.value, keyOffset: k.offset, value: value(depth + 1) });
        skip();
        if (text[i] === ',') i++;
        else if (text[i] !== '}') fail();
      }
    }
    if (c === '[') {
      i++;
      const items: JsonNode[] = [];
      for (;;) {
        skip();
        if (text[i] === ']') {
          i++;
          return { type: 'array', offset: start, length: i - start, items };
        }
        items.push(value(depth + 1));
        skip();
        if (text[i] === ',') i++;
        else if (text[i] !== ']') fail();
      }
    }
    if (c === '"') return { type: 'string', ...str() };
    const m = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 64));
    if (!m) fail();
    i += m![0].length;
    const lit = m![0];
    if (lit === 'true' || lit === 'false') return { type: 'boolean', offset: start, length: lit.length, value: lit === 'true' };
    if (lit === 'null') return { type: 'null', offset: start, length: 4, value: null };
    return { type: 'number', offset: start, length: lit.length, value: Number(lit) };
  };
  try {
    const v = value(0);
    skip();
    return i >= text.length ? v : undefined;
  } catch (e) {
    if (e instanceof ParseError) return undefined;
    throw e;
  }
}
