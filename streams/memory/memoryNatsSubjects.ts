/**
 * Whether `subject` is one NATS accepts: non-empty `.`-separated tokens without whitespace. With
 * `wildcards` (a subscription) a token may be `*`, and `>` may stand as the last token; without
 * (a publish) neither may appear at all.
 */
export function validSubject(subject: string, wildcards: boolean): boolean {
  if (subject === '' || /\s/.test(subject)) return false;
  const tokens = subject.split('.');
  return tokens.every(
    (t, i) =>
      t !== '' &&
      (wildcards
        ? (t === '>' ? i === tokens.length - 1 : !t.includes('>')) && (t === '*' || !t.includes('*'))
        : !t.includes('*') && !t.includes('>')),
  );
}

/**
 * Whether a subscription's subject matches a published one, both split into tokens as NATS does:
 * `*` matches exactly one token, a trailing `>` one or more, anything else only itself.
 */
export function subjectMatches(pattern: readonly string[], subject: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '>') return subject.length > i;
    if (i >= subject.length) return false;
    if (pattern[i] !== '*' && pattern[i] !== subject[i]) return false;
  }
  return subject.length === pattern.length;
}
