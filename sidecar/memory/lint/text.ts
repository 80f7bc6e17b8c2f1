/**
 * Text analysis for the memory lint: normalisation, typed tokens, a light stemmer, the small
 * lexicons (negations, antonyms, exclusive alternatives, single-valued attributes, incompatible
 * claims) and the similarity measures. Pure functions.
 */
import { wordnetAntonyms, wordnetLemma } from './lexicon';

/** Token types: words and the value shapes a memory asserts. */
export type TokenType = 'word' | 'num' | 'ver' | 'ip' | 'date' | 'path' | 'url' | 'email';

export interface Token {
  /** Normalised form (stemmed and canonicalised for words; the literal for values). */
  t: string;
  type: TokenType;
  /** Offset of the token in normalise(text) (words only). */
  at?: number;
  /** A character bigram of a script written without spaces (Chinese, Japanese, Thai, Korean). */
  cjk?: boolean;
}

const STOP = new Set(
  (
    'a an the is are was were be been being am to of in on at for with and or by as it its this that these those ' +
    'has have had do does did i my me we our us you your he she his her they them their from so also very just ' +
    'which who whom what when where there here then than into onto about over under via per should would could ' +
    'will shall can may might must let lets please s re ve ll d t all every each any some really only across much many but'
  ).split(' '),
);

/** Negation markers (after expanding n't). "never" is also an antonym of "always". */
export const NEGATIONS = new Set(['not', 'no', 'never', 'without', 'nor', 'none', 'neither']);

/** Canonical forms: synonyms map to one word (after stemming). */
const SYNONYMS = new Map<string, string>(
  Object.entries({
    love: 'like',
    enjoy: 'like',
    prefer: 'like',
    fond: 'like',
    favor: 'like',
    favour: 'like',
    want: 'like',
    hate: 'dislike',
    detest: 'dislike',
    avoid: 'dislike',
    loathe: 'dislike',
    colour: 'color',
    theme: 'mode',
    repository: 'repo',
    database: 'db',
    configuration: 'config',
    directory: 'dir',
    folder: 'dir',
    package: 'pkg',
    kubernetes: 'k8s',
    javascript: 'js',
    typescript: 'ts',
    postgresql: 'postgres',
    psql: 'postgres',
    macos: 'mac',
    osx: 'mac',
    window: 'windows',
    utilize: 'use',
    utilise: 'use',
    employ: 'use',
    listen: 'listen',
    machine: 'host',
    server: 'host',
    box: 'host',
    hostname: 'host',
    username: 'user',
    favourite: 'favorite',
    indentation: 'indent',
    telephone: 'phone',
    mobile: 'phone',
    e: 'e',
    disabled: 'disable',
    enabled: 'enable',
    turned: 'turn',
    speak: 'speak',
    lang: 'language',
    tz: 'timezone',
  }),
);

/** Antonym pairs (canonical stems): a restatement with one swapped for the other contradicts. */
const ANTONYM_PAIRS: Array<[string, string]> = [
  ['like', 'dislike'],
  ['enable', 'disable'],
  ['allow', 'deny'],
  ['allow', 'forbid'],
  ['always', 'never'],
  ['on', 'off'],
  ['true', 'false'],
  ['yes', 'no'],
  ['include', 'exclude'],
  ['accept', 'reject'],
  ['public', 'private'],
  ['online', 'offline'],
  ['open', 'closed'],
  ['start', 'stop'],
  ['before', 'after'],
  ['up', 'down'],
  ['add', 'remove'],
  ['install', 'uninstall'],
  ['synchronous', 'asynchronous'],
  ['sync', 'async'],
  ['required', 'optional'],
  ['mandatory', 'optional'],
  ['allowed', 'forbidden'],
  ['safe', 'unsafe'],
  ['stable', 'unstable'],
  ['active', 'inactive'],
  ['available', 'unavailable'],
  ['married', 'single'],
  ['remote', 'local'],
  ['lowercase', 'uppercase'],
];

/** Exclusive alternatives: one subject has one of these at a time. */
const ALTERNATIVES: string[][] = [
  ['tab', 'space'],
  ['light', 'dark'],
  ['vim', 'emacs', 'nano', 'neovim', 'nvim', 'vscode', 'helix', 'sublime', 'jetbrains', 'intellij', 'zed'],
  ['npm', 'pnpm', 'yarn', 'bun'],
  ['bash', 'zsh', 'fish', 'powershell'],
  ['mac', 'linux', 'windows'],
  ['postgres', 'mysql', 'sqlite', 'mariadb', 'mongodb', 'redis', 'dynamodb'],
  ['celsius', 'fahrenheit'],
  ['metric', 'imperial'],
  ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'],
  ['january', 'february', 'march', 'april', 'june', 'july', 'august', 'september', 'october', 'november', 'december'],
  ['github', 'gitlab', 'bitbucket', 'gitea', 'forgejo'],
  ['docker', 'podman'],
  ['aws', 'gcp', 'azure', 'hetzner', 'digitalocean'],
  ['python', 'js', 'ts', 'go', 'rust', 'java', 'ruby', 'php', 'kotlin', 'swift', 'elixir'],
  ['ubuntu', 'debian', 'fedora', 'arch', 'alpine', 'centos', 'rhel', 'nixos'],
  ['jest', 'vitest', 'mocha', 'pytest', 'unittest'],
  ['webpack', 'esbuild', 'vite', 'rollup', 'parcel'],
  ['react', 'vue', 'svelte', 'angular', 'solid'],
  ['concise', 'verbose', 'detailed'],
  ['morning', 'afternoon', 'evening', 'night'],
  ['english', 'german', 'french', 'spanish', 'italian', 'dutch', 'japanese', 'chinese'],
  ['cat', 'dog'],
  ['nginx', 'apache', 'caddy', 'traefik'],
  ['slack', 'discord', 'teams', 'telegram', 'signal', 'whatsapp'],
  ['gmail', 'outlook', 'protonmail', 'fastmail'],
  ['chrome', 'chromium', 'firefox', 'safari', 'edge', 'brave'],
  ['puppeteer', 'playwright', 'selenium', 'cypress'],
  ['merge', 'rebase', 'squash'],
  ['main', 'master', 'develop', 'trunk'],
  ['iphone', 'android', 'pixel'],
  ['ssh', 'https'],
  ['utc', 'cet', 'cest', 'pst', 'est', 'gmt'],
];

/**
 * Claims that cannot both hold for one subject, though neither is the negation of the other
 * (public report hermes-agent#66654: "User is vegetarian" vs "User had steak"). Group name, the
 * claim words, the words that conflict with them.
 */
const INCOMPATIBLE: Array<{ group: string; claim: string[]; conflict: string[] }> = [
  {
    group: 'diet',
    claim: ['vegetarian', 'vegan', 'pescatarian'],
    conflict: [
      'steak',
      'beef',
      'pork',
      'bacon',
      'ham',
      'burger',
      'chicken',
      'lamb',
      'meat',
      'sausage',
      'salami',
      'veal',
      'brisket',
    ],
  },
  { group: 'diet-vegan', claim: ['vegan'], conflict: ['cheese', 'milk', 'egg', 'butter', 'yogurt', 'honey'] },
  {
    group: 'alcohol',
    claim: ['teetotal', 'teetotaler', 'sober'],
    conflict: ['beer', 'wine', 'whisky', 'whiskey', 'vodka', 'cocktail', 'drunk'],
  },
  { group: 'smoking', claim: ['nonsmoker'], conflict: ['smoke', 'smoked', 'cigarette', 'cigar'] },
  { group: 'lactose', claim: ['lactose'], conflict: ['milkshake'] },
];

/**
 * Single-valued attributes: a restatement that swaps one other word beside one of these
 * ("timezone Europe/Berlin" vs "timezone America/Chicago") contradicts.
 */
export const FUNCTIONAL = new Set([
  'name',
  'timezone',
  'tz',
  'email',
  'port',
  'version',
  'password',
  'default',
  'favorite',
  'birthday',
  'born',
  'live',
  'located',
  'location',
  'city',
  'country',
  'editor',
  'shell',
  'os',
  'branch',
  'indent',
  'font',
  'wife',
  'husband',
  'partner',
  'manager',
  'boss',
  'phone',
  'currency',
  'deadline',
  'called',
  'named',
  'title',
  'role',
  'employer',
  'salary',
  'region',
  'runtime',
  'distro',
  'hometown',
  'nickname',
  'pronoun',
  'spouse',
  'target',
  'timezone',
]);

const ANTONYM = new Map<string, Set<string>>();
for (const [a, b] of ANTONYM_PAIRS) {
  if (!ANTONYM.has(a)) ANTONYM.set(a, new Set());
  if (!ANTONYM.has(b)) ANTONYM.set(b, new Set());
  ANTONYM.get(a)!.add(b);
  ANTONYM.get(b)!.add(a);
}
const ALT_GROUP = new Map<string, number>();
ALTERNATIVES.forEach((g, i) => g.forEach((w) => ALT_GROUP.set(w, i)));
const INCOMPAT_WORD = new Map<string, Array<{ group: string; side: 'claim' | 'conflict' }>>();
for (const g of INCOMPATIBLE) {
  for (const w of g.claim)
    (INCOMPAT_WORD.get(w) ?? INCOMPAT_WORD.set(w, []).get(w)!).push({ group: g.group, side: 'claim' });
  for (const w of g.conflict)
    (INCOMPAT_WORD.get(w) ?? INCOMPAT_WORD.set(w, []).get(w)!).push({ group: g.group, side: 'conflict' });
}

/** Whether a and b (canonical stems) are antonyms: the list above, or WordNet's main senses (lexicon.ts: "short" / "long"). */
export function areAntonyms(a: string, b: string): boolean {
  return (ANTONYM.get(a)?.has(b) ?? false) || wordnetAntonyms(a, b);
}
/** Whether a and b are different members of one exclusive-alternatives group. */
export function areAlternatives(a: string, b: string): boolean {
  const ga = ALT_GROUP.get(a);
  return ga !== undefined && a !== b && ALT_GROUP.get(b) === ga;
}
/** Whether a word (canonical) is a claim or conflict word of the incompatible-claims lexicon. */
export function isIncompatWord(w: string): boolean {
  return INCOMPAT_WORD.has(w);
}
/** Incompatible-claim groups in which `a` is a claim word and `b` a conflict word (or the reverse). */
export function incompatibleGroup(a: string, b: string): string | undefined {
  for (const x of INCOMPAT_WORD.get(a) ?? []) {
    for (const y of INCOMPAT_WORD.get(b) ?? []) {
      if (x.group === y.group && x.side !== y.side) return x.group;
    }
  }
  return undefined;
}

/**
 * Light English stemmer for matching (not for display): plural and past-tense endings only, so that
 * "uses"/"used"/"use" and "prefers"/"prefer" meet. Words of 3 letters or fewer are left alone.
 */
export function stem(w: string): string {
  if (w.length <= 3 || /[^a-z]/.test(w)) return w;
  if (w.endsWith('sses')) return w.slice(0, -2);
  if (w.endsWith('ies') && w.length > 4) return `${w.slice(0, -3)}y`;
  if (w.endsWith('ches') || w.endsWith('shes') || w.endsWith('xes')) return w.slice(0, -2);
  if (w.endsWith('s') && !/(ss|us|is|os)$/.test(w)) return w.slice(0, -1);
  if (w.endsWith('eed')) return w;
  if (w.endsWith('ied')) return `${w.slice(0, -3)}y`;
  if (w.endsWith('ed') && w.length > 4) {
    const base = w.slice(0, -2);
    if (/(at|iz|bl|us|ur|ov|in|ar|v|c|g|k)$/.test(base) && !/(ss|ll)$/.test(base)) return `${base}e`;
    if (/([^aeioul])\1$/.test(base)) return base.slice(0, -1);
    return base;
  }
  return w;
}

const canonMemo = new Map<string, string>();
/**
 * Canonical word: the WordNet lemma where the lexicon has one ("handled" → "handle", "running" →
 * "run"; lexicon.ts), else the light stemmer; then the synonym map (memoised; the vocabulary of a
 * store is small).
 */
export function canon(w: string): string {
  let c = canonMemo.get(w);
  if (c === undefined) {
    const s = wordnetLemma(w) ?? stem(w);
    c = SYNONYMS.get(s) ?? SYNONYMS.get(w) ?? s;
    if (canonMemo.size > 100_000) canonMemo.clear();
    canonMemo.set(w, c);
  }
  return c;
}

/** NFKC, lower case, typographic quotes to ASCII, "n't"/"cannot" expanded. */
export function normalise(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/\bwon't\b/g, 'will not')
    .replace(/\bcan't\b/g, 'can not')
    .replace(/\bcannot\b/g, 'can not')
    .replace(/n't\b/g, ' not');
}

/** The text as Hermes compares entries (after strip) plus case and whitespace folding: for exact duplicates. */
export function exactKey(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[\s.!;,]+$/, '')
    .trim();
}

/** Units written after a number ("16 GB", "30 minutes"), and their one spelling ("minutes" → "min"). */
const UNIT_CANON = new Map<string, string>(
  Object.entries({
    minute: 'min',
    minutes: 'min',
    mins: 'min',
    hour: 'h',
    hours: 'h',
    hr: 'h',
    hrs: 'h',
    second: 's',
    seconds: 's',
    sec: 's',
    secs: 's',
    day: 'd',
    days: 'd',
  }),
);
const UNITS = [
  'gb',
  'mb',
  'kb',
  'tb',
  'gib',
  'mib',
  'kib',
  'tib',
  'ghz',
  'mhz',
  'ms',
  'px',
  'min',
  ...UNIT_CANON.keys(),
]
  .sort((a, b) => b.length - a.length)
  .join('|');

/**
 * A letter of a spaced script (Latin with accents, Greek, Cyrillic, Hebrew, Arabic, Indic ...), and a
 * word character: listed scripts, not "any letter but Han", so the regex needs no lookahead per character.
 */
const SPACED =
  '\\p{Script=Latin}\\p{Script=Greek}\\p{Script=Cyrillic}\\p{Script=Armenian}\\p{Script=Georgian}\\p{Script=Hebrew}\\p{Script=Arabic}\\p{Script=Devanagari}\\p{Script=Bengali}\\p{Script=Tamil}\\p{Script=Ethiopic}';
const WL = `[${SPACED}]`;
const WC = `[${SPACED}\\p{M}\\p{N}_+#]`;
// Order matters: the first alternative that matches at a position wins.
const TOKEN_RE = new RegExp(
  [
    '(?<url>\\b(?:https?|ssh|git|ftp)://[^\\s`\'"<>()]+)',
    '(?<email>\\b[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+)',
    '(?<path>(?:~|\\.{1,2})?/(?:[\\w.@%+~-]+/)*[\\w.@%+~-]+/?)',
    '(?<date>\\b\\d{4}-\\d{2}-\\d{2}(?:[t ]\\d{2}:\\d{2}(?::\\d{2})?)?\\b)',
    '(?<ip>\\b\\d{1,3}(?:\\.\\d{1,3}){3}(?::\\d+)?\\b)',
    '(?<ver>\\bv?\\d+(?:\\.\\d+)+(?:[-+][\\w.]+)?\\b|\\b[a-z][\\w-]*@v?\\d+(?:\\.\\d+)*\\b)',
    // a time of day ("8:45", "17:00", "9:15pm"): one value, not two numbers
    '(?<time>\\b\\d{1,2}:\\d{2}(?::\\d{2})?(?:\\s?[ap]m)?\\b)',
    // a number with its unit written apart ("16 GB", "30 minutes"): one value, as "16gb" is
    `(?<unit>\\b\\d+(?:[.,]\\d+)?\\s(?:${UNITS})\\b)`,
    '(?<num>\\b\\d+(?:[.,]\\d+)?(?:[a-z]{1,3})?\\b)',
    // Scripts written without spaces (Chinese, Japanese, Thai, Korean): runs, split into character bigrams below.
    '(?<cjk>[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Hangul}]+)',
    `(?<word>${WL}${WC}*(?:[.'/-]${WC}+)*)`,
  ].join('|'),
  'gu',
);

/** The same tokens for pure ASCII text (most entries): no Unicode property classes, several times faster. */
const TOKEN_RE_ASCII = new RegExp(
  TOKEN_RE.source
    .replace(/\(\?<cjk>[^)]*\)\|/, '')
    .replace(/\(\?<word>.*\)$/, "(?<word>[a-z][a-z0-9_+#]*(?:[.'/-][a-z0-9_+#]+)*)"),
  'g',
);

/** Characters of scripts written without spaces, whose words are compared as character bigrams. */
export const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Hangul}]/u;

/**
 * Units and suffixes a number keeps, written together or apart ("8 GB" = "8GB", "15 min" = "15min",
 * "5 pm" = "5pm"): one value either way.
 */
const UNIT_SUFFIXES = new Set(
  (
    'b kb mb gb tb pb kib mib gib tib k m g t ms s sec min h hr hrs d px pt em rem vh vw fps hz khz mhz ghz ' +
    'w kw v mah am pm st nd rd th x'
  ).split(' '),
);

/** Whether a string ends in a letter a-z (a number with a unit suffix: "16gb", "30min"). */
function endsInLetter(x: string): boolean {
  const c = x.charCodeAt(x.length - 1);
  return c >= 97 && c <= 122;
}

/** Typed tokens of a text (stopwords dropped, words canonicalised). Negations are kept as words. */
export function tokens(text: string): Token[] {
  const out: Token[] = [];
  const s = normalise(text);
  let skipTo = -1;
  // eslint-disable-next-line no-control-regex
  for (const m of s.matchAll(/^[\x00-\x7f]*$/.test(s) ? TOKEN_RE_ASCII : TOKEN_RE)) {
    if ((m.index ?? 0) < skipTo) continue; // a unit joined to the number before it
    const g = m.groups!;
    // A number and a unit are one value however they are spaced ("8 GB" / "8GB"); a number and a word
    // are two tokens however they are spaced ("Qwen 3.7 Max" / "Qwen 3.7Max").
    const n = g.num ?? (g.ver && /^\d+\.\d+$/.test(g.ver) ? g.ver : undefined);
    if (n) {
      const end = (m.index ?? 0) + n.length;
      // (both tests below need a letter at the end, or a space after: checked first, as most numbers have neither)
      const glued = endsInLetter(n) ? /^(\d+(?:[.,]\d+)?)([a-z]{3})$/.exec(n) : null;
      if (glued && !UNIT_SUFFIXES.has(glued[2])) {
        out.push({ t: glued[1], type: g.num ? 'num' : 'ver' });
        if (!STOP.has(glued[2])) out.push({ t: canon(glued[2]), type: 'word', at: (m.index ?? 0) + glued[1].length });
        continue;
      }
      const unit = s.charCodeAt(end) === 32 ? /^ ([a-z]{1,3})\b/.exec(s.slice(end, end + 5)) : null;
      if (unit && UNIT_SUFFIXES.has(unit[1]) && /^\d+(?:[.,]\d+)?$/.test(n)) {
        out.push({ t: n + unit[1], type: 'num' });
        skipTo = end + unit[0].length;
        continue;
      }
    }
    if (g.url) out.push({ t: g.url.replace(/[.,;:]+$/, ''), type: 'url' });
    else if (g.email) out.push({ t: g.email, type: 'email' });
    else if (g.path) {
      const p = g.path.replace(/[.,;:]+$/, '');
      // "and/or" style slashes are words, not paths; a path starts with / ~/ ./ ../
      out.push({ t: p, type: 'path' });
    } else if (g.date) out.push({ t: g.date, type: 'date' });
    else if (g.ip) out.push({ t: g.ip, type: 'ip' });
    else if (g.ver) out.push({ t: g.ver.replace(/^v(?=\d)/, ''), type: 'ver' });
    else if (g.time) out.push({ t: g.time.replace(/\s+/g, ''), type: 'num' });
    else if (g.unit) {
      const [n, u] = g.unit.split(/\s+/);
      out.push({ t: `${n}${UNIT_CANON.get(u) ?? u}`, type: 'num' });
    } else if (g.num)
      out.push({
        t: endsInLetter(g.num)
          ? g.num.replace(/^(\d+(?:[.,]\d+)?)([a-z]+)$/, (_, n: string, u: string) => n + (UNIT_CANON.get(u) ?? u))
          : g.num,
        type: 'num',
      });
    else if (g.cjk) {
      // Character bigrams (a single character stays one token): restatements share most of them.
      const run = g.cjk;
      if (run.length === 1) out.push({ t: run, type: 'word', at: m.index, cjk: true });
      for (let i = 0; i + 1 < run.length; i++)
        out.push({ t: run.slice(i, i + 2), type: 'word', at: (m.index ?? 0) + i, cjk: true });
    } else if (g.word) {
      let w = g.word.replace(/'s$/, '');
      if (w.includes("'")) w = w.replace(/'/g, '');
      if (STOP.has(w)) continue;
      out.push({ t: canon(w), type: 'word', at: m.index });
    }
  }
  return out;
}

/** Whether a token is a value (number, version, path ...), not a word. */
export function isValue(tok: Token): boolean {
  return tok.type !== 'word';
}

/**
 * The masked key of a token for candidate search: values become their type ("#num"), negations
 * vanish (null), antonyms, alternatives and incompatible claims become their group, so that a
 * contradiction and its statement share all keys.
 */
export function maskKey(tok: Token): string | null {
  if (tok.type !== 'word') return tok.type === 'date' ? '#date' : `#${tok.type === 'ver' ? 'num' : tok.type}`;
  const w = tok.t;
  if (NEGATIONS.has(w)) return null;
  const ant = ANTONYM.get(w);
  if (ant) return `~${[w, ...ant].sort()[0]}`;
  const g = ALT_GROUP.get(w);
  if (g !== undefined) return `@alt${g}`;
  if (INCOMPAT_WORD.has(w)) return '!incompatible';
  return w;
}

/** Jaccard of two sets. */
export function jaccard<T>(a: Set<T>, b: Set<T>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  const [s, l] = a.size <= b.size ? [a, b] : [b, a];
  for (const x of s) if (l.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

/** |small ∩ large| / |small|. */
export function containment<T>(a: Set<T>, b: Set<T>): number {
  const [s, l] = a.size <= b.size ? [a, b] : [b, a];
  if (s.size === 0) return 0;
  let inter = 0;
  for (const x of s) if (l.has(x)) inter++;
  return inter / s.size;
}

/** Word shingles: unigrams and bigrams of the token forms. */
export function shingles(toks: string[]): Set<string> {
  const out = new Set<string>(toks);
  for (let i = 0; i + 1 < toks.length; i++) out.add(`${toks[i]} ${toks[i + 1]}`);
  return out;
}

/** Character trigrams of the folded text (letters and digits only, spaces collapsed). */
export function trigrams(text: string): Set<string> {
  const s = ` ${normalise(text)
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= s.length; i++) out.add(s.slice(i, i + 3));
  return out;
}

/** Levenshtein distance, capped: returns cap+1 as soon as it exceeds cap. */
export function editDistance(a: string, b: string, cap = 2): number {
  if (Math.abs(a.length - b.length) > cap) return cap + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > cap) return cap + 1;
    prev = cur;
  }
  return prev[b.length];
}

/** Shorten a text for a message: first `max` characters on one line. */
export function quote(text: string, max = 120): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return `"${one.length > max ? `${one.slice(0, max - 1)}…` : one}"`;
}
