/**
 * What the generator reads off a field's pattern (fields.js): whether `PatternProperty` takes it, its
 * longest match (the max length by default), example values that match it and one that does not.
 */
const RandExp = require('randexp');
const ret = require('ret');

/** The most characters `pattern` matches (Infinity when unbounded), read off its syntax tree. */
function longestMatch(pattern) {
  const longest = (token) => {
    switch (token.type) {
      case ret.types.ROOT:
      case ret.types.GROUP:
        if (token.followedBy || token.notFollowedBy || token.lookBehind) return 0;
        return Math.max(
          ...(token.options ?? [token.stack]).map((stack) => stack.reduce((sum, t) => sum + longest(t), 0)),
        );
      case ret.types.REPETITION: {
        const each = longest(token.value);
        return each === 0 || token.max === 0 ? 0 : (token.max ?? Infinity) * each;
      }
      case ret.types.POSITION:
        return 0;
      case ret.types.REFERENCE:
        return Infinity;
      default:
        return 1;
    }
  };
  return longest(ret(pattern.source));
}

/**
 * Why `pattern` cannot be a `PatternProperty`'s, as the preset refuses it when the DTO is declared, or
 * undefined: it must hold the whole value (^ first, $ last, no | outside a group) and be valid with the
 * `u` flag, as JSON Schema reads it.
 */
function patternProblem(pattern) {
  try {
    new RegExp(pattern.source, 'u');
  } catch {
    return `the pattern ${pattern.source} is not valid with the u flag, as JSON Schema reads it`;
  }
  let root;
  try {
    root = ret(pattern.source);
  } catch (error) {
    return `the pattern ${pattern.source} cannot be read: ${error.message}`;
  }
  const stack = root.stack ?? [];
  const at = (token, value) => token?.type === ret.types.POSITION && token.value === value;
  if (!at(stack[0], '^') || !at(stack[stack.length - 1], '$')) {
    return `the pattern ${pattern.source} must hold the whole value: ^ first, $ last, any | inside a group`;
  }
  return undefined;
}

/**
 * Up to two values that match `pattern`, of at most `max` characters, for the examples: made by
 * randexp, seeded so the same pattern gives the same examples, and each checked against the pattern.
 */
function examplesOf(pattern, max) {
  const generator = new RandExp(pattern);
  let seed = 2463534242;
  generator.randInt = (from, to) => {
    seed = (seed * 48271) % 2147483647;
    return from + (seed % (to - from + 1));
  };
  generator.max = 3; // for `*` and `+`: short examples
  const found = new Set();
  for (let attempt = 0; attempt < 200 && found.size < 2; attempt++) {
    const value = generator.gen();
    // Each also fit for a JSDoc `@example`: no control character, backslash or end of comment.
    // eslint-disable-next-line no-control-regex -- control characters are what it refuses.
    if (value.length <= max && pattern.test(value) && !/[\u0000-\u001f\u007f\\]|\*\//.test(value)) found.add(value);
  }
  return [...found];
}

/** A value no longer than `valid` that misses `pattern`, for its 400, or undefined (e.g. `^.*$`). */
function offPattern(pattern, valid) {
  const candidates = [''];
  for (let i = 0; i < valid.length; i++) {
    for (const char of ['!', 'a', 'A', '0', ' ', '-']) candidates.push(valid.slice(0, i) + char + valid.slice(i + 1));
  }
  return candidates.find((candidate) => !pattern.test(candidate));
}

module.exports = { examplesOf, longestMatch, offPattern, patternProblem };
