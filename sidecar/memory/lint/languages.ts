/**
 * Language-aware reading for the memory lint's pairs across two languages (issue 12: entries in
 * Chinese, Thai, Greek ... next to their English versions). Pure and synchronous; no model.
 *
 * - `languagesNamed`: the languages a text names, in any of many languages ("Thai", "ไทย", "thaï",
 *   "泰语" → `th`), from the CLDR language names that Node's ICU carries (`Intl.DisplayNames`), so
 *   "Language: Thai only" and "Language: ไทยเท่านั้น" name one language, and "Language: Chinese" /
 *   "Language: 中文" are not two values of one attribute.
 * - `foreignNegation`: a negation word of a language written in another script than Latin ("όχι",
 *   "не", "ไม่", "لا"), which the English reading (text.ts NEGATIONS) does not see; used only for pairs
 *   across two scripts, so that "RunPod SSH: never password" / "… όχι password" are negated alike.
 */

/**
 * ISO 639-1 codes of the languages whose names are recognised, and the languages their names are
 * read in (CLDR display names; the first is Node's fallback when a name is not known).
 */
const CODES = [
  'en',
  'zh',
  'ja',
  'ko',
  'th',
  'vi',
  'id',
  'ms',
  'hi',
  'bn',
  'ar',
  'he',
  'fa',
  'tr',
  'ru',
  'uk',
  'pl',
  'cs',
  'el',
  'de',
  'fr',
  'es',
  'pt',
  'it',
  'nl',
  'sv',
  'da',
  'no',
  'fi',
  'hu',
  'ro',
  'bg',
  'sr',
  'hr',
  'ta',
  'ur',
  'tl',
  'sw',
];

/** Names that are common words in another sense ("polish the UI"): not read as a language. */
const AMBIGUOUS = new Set(['polish']);

/** Other names of a language than CLDR's in these locales (Chinese written as "Mandarin", "普通话"). */
const ALIASES: Record<string, string> = {
  mandarin: 'zh',
  普通话: 'zh',
  汉语: 'zh',
  華語: 'zh',
  华语: 'zh',
  國語: 'zh',
  中文: 'zh',
  英语: 'en',
  英文: 'en',
  泰语: 'th',
  泰文: 'th',
};

/** Letters of scripts written without spaces, where a name is found inside a run of text. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Hangul}]/u;

let names: { spaced: Map<string, string>; unspaced: Array<[string, string]> } | undefined;

/** name → code, built once from Intl.DisplayNames (about 1,400 names; a few ms). */
function nameTable(): { spaced: Map<string, string>; unspaced: Array<[string, string]> } {
  if (names) return names;
  const spaced = new Map<string, string>();
  const unspaced = new Map<string, string>();
  const add = (name: string, code: string): void => {
    const n = name.toLowerCase().normalize('NFC');
    if (n.length < 2 || AMBIGUOUS.has(n)) return;
    (UNSPACED.test(n) ? unspaced : spaced).set(n, code);
  };
  for (const locale of CODES) {
    let dn: Intl.DisplayNames;
    try {
      dn = new Intl.DisplayNames([locale], { type: 'language', fallback: 'none' });
    } catch {
      continue; // a Node without full ICU: English names only (below)
    }
    for (const code of CODES) {
      const n = dn.of(code);
      if (n) add(n, code);
    }
  }
  try {
    const en = new Intl.DisplayNames(['en'], { type: 'language' });
    for (const code of CODES) add(en.of(code) ?? code, code);
  } catch {
    // no Intl.DisplayNames at all: aliases only
  }
  for (const [n, code] of Object.entries(ALIASES)) add(n, code);
  // longest first, so "普通话" is found before a shorter name inside it
  names = { spaced, unspaced: [...unspaced].sort((x, y) => y[0].length - x[0].length) };
  return names;
}

/**
 * The languages a text names (ISO 639-1 codes), in any of the languages of CODES: whole words in
 * spaced scripts ("Thai", "italiano", "Ελληνικά"), inside the text in scripts written without
 * spaces ("ไทยเท่านั้น", "用中文回复").
 * @returns the codes, sorted; empty when the text names none
 */
export function languagesNamed(text: string): string[] {
  const hit = seen.get(text);
  if (hit) return hit;
  if (seen.size >= SEEN_MAX) seen.clear();
  const r = readLanguages(text);
  seen.set(text, r);
  return r;
}

/** languagesNamed of texts read before (a pair rule asks for one entry's again and again). */
const seen = new Map<string, string[]>();
const SEEN_MAX = 10_000;

function readLanguages(text: string): string[] {
  const t = nameTable();
  const s = text.toLowerCase().normalize('NFC');
  const out = new Set<string>();
  for (const m of s.matchAll(/[\p{L}\p{M}]+(?:[-' ][\p{L}\p{M}]+)?/gu)) {
    const w = m[0];
    const whole = t.spaced.get(w);
    if (whole) out.add(whole);
    else if (w.includes(' ') || w.includes('-') || w.includes("'")) {
      // two-word names ("norwegian bokmål") are rare; read the parts
      for (const part of w.split(/[-' ]/)) {
        const c = t.spaced.get(part);
        if (c) out.add(c);
      }
    }
  }
  if (UNSPACED.test(s)) {
    let rest = s;
    for (const [n, code] of t.unspaced) {
      if (rest.includes(n)) {
        out.add(code);
        rest = rest.split(n).join(' ');
      }
    }
  }
  return [...out].sort();
}

/** Whether two texts name the same languages, at least one (`languagesNamed`). */
export function sameLanguagesNamed(a: string, b: string): string[] | undefined {
  const x = languagesNamed(a);
  const y = languagesNamed(b);
  return x.length && x.join() === y.join() ? x : undefined;
}

/** Negation words of languages in scripts other than Latin, as whole words (spaced scripts). */
const NEGATION_WORDS = new Set([
  // Greek
  'όχι',
  'οχι',
  'δεν',
  'μην',
  'μη',
  'ποτέ',
  'ποτε',
  'ούτε',
  'χωρίς',
  // Russian, Ukrainian, Bulgarian, Serbian
  'не',
  'нет',
  'никогда',
  'без',
  'ні',
  'ніколи',
  'никога',
  'никад',
  // Arabic, Persian, Urdu
  'لا',
  'لم',
  'لن',
  'ليس',
  'بدون',
  'نه',
  'نہیں',
  // Hebrew
  'לא',
  'אל',
  'אין',
  'בלי',
  'לעולם',
  // Hindi
  'नहीं',
  'मत',
  'बिना',
]);
/** Negations in Thai (written without spaces): found inside the text. */
const THAI_NEGATIONS = ['ไม่', 'ห้าม', 'อย่า', 'ไม่เคย'];

/**
 * A negation word of a language written in another script than Latin, when the text has one
 * ("πάντα SSH public key, όχι password" → "όχι"). Chinese, Japanese and Korean are left out:
 * Chinese negation is read clause by clause in soft.ts, and a single character such as 不 is part of
 * many words that negate nothing (不同 "different").
 * @returns the word, or undefined
 */
export function foreignNegation(text: string): string | undefined {
  const s = text.toLowerCase().normalize('NFC');
  for (const m of s.matchAll(/[\p{L}\p{M}]+/gu)) if (NEGATION_WORDS.has(m[0])) return m[0];
  return THAI_NEGATIONS.find((w) => s.includes(w));
}
