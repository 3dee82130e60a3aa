/**
 * The fields of a generated resource, each from one `--field` spec: `<name>[?]:<kind>[:<argument>]`,
 * `?` for an optional field (absent, never null). The kinds, each a preset of `src/common/`:
 *
 *   name:text:200             text of 1 to 200 characters (`text:3..200`: 3 to 200)
 *   count:integer:1..10000    an int32 from 1 to 10000
 *   done:boolean              true or false
 *   stock:int64               an int64, kept exactly
 *   country:pattern:^[A-Z]{2}$      a string matching the pattern, written ^…$; at most as long as its
 *                                   longest match, or `pattern:12:^…$` for 12 (needed when unbounded)
 *   size:oneof:small|medium|large   one of these strings
 *
 * Each field becomes the data the templates write it from: its domain and DTO types, its preset and
 * JSDoc, its column on both stores and in the domain file's declaration, and its example values and 400s.
 */
const { examplesOf, longestMatch, offPattern, patternProblem } = require('./patterns');

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const FIELD = /^(?<name>[a-z][a-zA-Z0-9]*)(?<optional>\??):(?<kind>[a-z0-9]+)(?::(?<argument>.*))?$/s;
const UNBOUNDED_PATTERN_MAX = 200;
const ONE_OF_VALUE = /^[A-Za-z0-9_.-]+(?: [A-Za-z0-9_.-]+)*$/;

// Names a field cannot take: the key, what the validation pipe refuses as a body key, the words a
// destructuring cannot bind, and the words either store's DDL cannot take as a column.
const RESERVED = new Set(
  [
    'id constructor prototype __proto__',
    'arguments await break case catch class const continue debugger default delete do else enum eval export',
    'extends false finally for function if implements import in instanceof interface let new null package',
    'private protected public return static super switch this throw true try typeof var void while with yield',
    // PostgreSQL's reserved key words, and SQLite's that a column cannot be named.
    'add all alter analyse analyze and any array as asc asymmetric authorization autoincrement between both',
    'cast check collate collation column commit concurrently constraint create cross current_catalog',
    'current_date current_role current_schema current_time current_timestamp current_user deferrable desc',
    'distinct drop end escape except exists fetch foreign freeze from full grant group having ilike index',
    'initially inner insert intersect into is isnull join lateral leading left like limit localtime',
    'localtimestamp natural not nothing notnull offset on only or order outer overlaps placing primary',
    'references returning right select session_user set similar some symmetric system_user table',
    'tablesample then to trailing transaction union unique update user using values variadic verbose when',
    'where window',
  ]
    .join(' ')
    .split(' '),
);

/** Why a spec is refused: thrown as the schematic's error. */
class FieldError extends Error {}

const words = (camel) => camel.replace(/([A-Z])/g, ' $1').toLowerCase();
const pascal = (camel) => camel[0].toUpperCase() + camel.slice(1);
const article = (spoken) => (/^[aeiou]/.test(spoken) ? 'an' : 'a');
/** A string as a TypeScript literal (Prettier makes its quotes single). */
const str = (value) => JSON.stringify(value);
/** A string of `length` characters as a TypeScript expression, short even when it is long. */
const repeated = (char, length) => (length > 12 ? `${str(char)}.repeat(${length})` : str(char.repeat(length)));

/** `1..200` as [1, 200], or undefined. */
function range(argument) {
  const match = /^(-?\d+)\.\.(-?\d+)$/.exec(argument ?? '');
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

const KINDS = {
  text(field, argument) {
    const bounds = /^\d+$/.test(argument ?? '') ? [1, Number(argument)] : range(argument);
    if (bounds === undefined || bounds[0] < 0 || bounds[1] < Math.max(bounds[0], 1)) {
      throw new FieldError(`text takes its length: "${field.name}:text:200" (1 to 200) or "${field.name}:text:3..200"`);
    }
    const [min, max] = bounds;
    const fit = (text) => text.slice(0, max).padEnd(min, 'x');
    const sample = `Example ${field.name === 'name' ? field.resource : field.spoken}`;
    const length = `${min} to ${max} characters long`;
    return {
      preset: 'TextProperty',
      options: [...(min === 1 ? [] : [`min: ${min}`]), `max: ${max}`],
      type: 'string',
      rule: `${min} to ${max} characters, no NUL`,
      example: str(sample.length >= min && sample.length <= max ? sample : fit('First')),
      ...columns('TEXT', 'TEXT', 'column.text()'),
      values: [str(fit('First')), str(fit('Other'))],
      typeMessage: `${field.name} must be a string`,
      invalid: [
        [`${field.a} that is not a string`, '5', `${field.name} must be a string`],
        ...(min > 0
          ? [
              [
                min === 1 ? `an empty ${field.spoken}` : `${field.a} of ${min - 1} characters`,
                repeated('x', min - 1),
                `${field.name} must be ${length}`,
              ],
            ]
          : []),
        [`${field.a} of ${max + 1} characters`, repeated('x', max + 1), `${field.name} must be ${length}`],
        [
          `${field.a} with NUL`,
          str('a'.repeat(Math.max(min, 1) - 1) + '\u0000'),
          `${field.name} must be Unicode text without NUL characters`,
        ],
        [
          `${field.a} with an unpaired surrogate`,
          str('a'.repeat(Math.max(min, 1) - 1) + '\ud800'),
          `${field.name} must be Unicode text without NUL characters`,
        ],
      ],
    };
  },

  integer(field, argument) {
    const bounds = range(argument);
    if (bounds === undefined || bounds[0] < INT32_MIN || bounds[1] > INT32_MAX || bounds[0] >= bounds[1]) {
      throw new FieldError(`integer takes its bounds, within int32 and min < max: "${field.name}:integer:1..10000"`);
    }
    const [min, max] = bounds;
    const message = `${field.name} must be an integer between ${min} and ${max}`;
    return {
      preset: 'IntegerProperty',
      options: [`min: ${min}`, `max: ${max}`],
      type: 'number',
      rule: `an integer from ${min} to ${max}`,
      example: String(min),
      ...columns('INTEGER', 'INTEGER', 'column.integer()'),
      values: [String(min), String(max)],
      typeMessage: message,
      invalid: [
        [`${field.a} as a string`, str(String(min)), message],
        [`a fractional ${field.spoken}`, String(min + 0.5), message],
        ...(min > INT32_MIN ? [[`${field.a} below ${min}`, String(min - 1), message]] : []),
        ...(max < INT32_MAX ? [[`${field.a} above ${max}`, String(max + 1), message]] : []),
      ],
    };
  },

  boolean(field, argument) {
    if (argument !== undefined) throw new FieldError(`boolean takes nothing more: "${field.name}:boolean"`);
    const message = `${field.name} must be true or false`;
    return {
      preset: 'BooleanProperty',
      options: [],
      type: 'boolean',
      description: `Whether the ${field.resource} is ${field.spoken}: true or false.`,
      example: 'true',
      sqlite: `INTEGER${field.optional ? '' : ' NOT NULL'} CHECK (${field.column} IN (0, 1))`,
      ...columns(undefined, 'BOOLEAN', 'column.boolean()'),
      values: ['true', 'false'],
      typeMessage: message,
      invalid: [
        [`${field.a} as a string`, str('true'), message],
        [`${field.a} as a number`, '1', message],
      ],
    };
  },

  int64(field, argument) {
    if (argument !== undefined) throw new FieldError(`int64 takes nothing more: "${field.name}:int64"`);
    const message = `${field.name} must be an integer in the int64 range`;
    return {
      preset: 'Int64Property',
      options: [],
      type: 'bigint',
      rule: 'any integer in the int64 range, kept exactly',
      example: '10',
      ...columns('INTEGER', 'BIGINT', 'column.int64()'),
      // Beyond 2^53 and the int64 minimum: both stores keep them exactly, neither as a double.
      values: ['9007199254740993n', '-(2n ** 63n)'],
      typeMessage: message,
      invalid: [
        [`${field.a} as a string`, str('7'), message],
        [`${field.a} beyond int64`, '2n ** 63n', message],
      ],
    };
  },

  pattern(field, argument) {
    const match = /^(?:(?<max>\d+):)?(?<source>\^.*)$/s.exec(argument ?? '');
    if (match === null) {
      throw new FieldError(
        `pattern takes a pattern written ^…$, and its max length if it is not bounded: "${field.name}:pattern:^[A-Z]{2}$" or "${field.name}:pattern:100:^[a-z-]+$"`,
      );
    }
    let pattern;
    try {
      pattern = new RegExp(match.groups.source);
    } catch (error) {
      throw new FieldError(`the pattern ${match.groups.source} is not a regular expression: ${error.message}`);
    }
    const problem = patternProblem(pattern);
    if (problem !== undefined) throw new FieldError(problem);
    const longest = longestMatch(pattern);
    const max = match.groups.max === undefined ? Math.min(longest, UNBOUNDED_PATTERN_MAX) : Number(match.groups.max);
    if (!(max > 0)) throw new FieldError(`the max length of ${field.name} must be a positive integer`);
    if (match.groups.max === undefined && longest > UNBOUNDED_PATTERN_MAX) {
      throw new FieldError(
        `the pattern ${pattern.source} has no longest match to take as its max length: give one, "${field.name}:pattern:100:${pattern.source}"`,
      );
    }
    const [first, second] = examplesOf(pattern, max);
    if (second === undefined) {
      throw new FieldError(`no two values of at most ${max} characters match ${pattern.source}, to use as examples`);
    }
    const source = pattern.source;
    const off = offPattern(pattern, first);
    return {
      preset: 'PatternProperty',
      options: [`pattern: /${source}/`, `max: ${max}`],
      type: 'string',
      rule: `matches \`${source}\`, at most ${max} characters`,
      example: str(first),
      ...columns('TEXT', 'TEXT', 'column.text()'),
      values: [str(first), str(second)],
      typeMessage: `${field.name} must be a string`,
      invalid: [
        [`${field.a} that is not a string`, '5', `${field.name} must be a string`],
        [
          `${field.a} of ${max + 1} characters`,
          repeated('x', max + 1),
          `${field.name} must be at most ${max} characters long`,
        ],
        ...(off === undefined ? [] : [[`${field.a} off its pattern`, str(off), `${field.name} must match ${source}`]]),
      ],
    };
  },

  oneof(field, argument) {
    const values = (argument ?? '').split('|');
    if (values.length < 2 || new Set(values).size !== values.length || !values.every((v) => ONE_OF_VALUE.test(v))) {
      throw new FieldError(
        `oneof takes two or more distinct values (letters, digits, _ . - and inner spaces), joined by |: "${field.name}:oneof:small|medium|large"`,
      );
    }
    const listed = `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
    const message = `${field.name} must be ${listed}`;
    let other = `${values[0]}x`;
    while (values.includes(other)) other += 'x';
    const shouted = values.find((v) => v.toUpperCase() !== v && !values.includes(v.toUpperCase()))?.toUpperCase();
    const type = `${field.Resource}${pascal(field.name)}`;
    return {
      preset: 'OneOfProperty',
      options: [`values: [${values.map(str).join(', ')}]`],
      type,
      // The domain file declares the union once; the DTO and the row import it.
      declaration: `export type ${type} = ${values.map(str).join(' | ')};`,
      rule: listed,
      example: str(values[0]),
      ...columns('TEXT', 'TEXT', `column.text<${type}>()`),
      values: [str(values[0]), str(values[1])],
      typeMessage: message,
      invalid: [
        [`another ${field.spoken}`, str(other), message],
        ...(shouted === undefined ? [] : [[`${field.a} in another case`, str(shouted), message]]),
      ],
    };
  },
};

/** A field's column type on each store, and its column in the domain file's declaration (required). */
function columns(sqlite, postgres, declared) {
  return { sqliteType: sqlite, postgresType: postgres, declared };
}

/**
 * The fields of the `--field` specs, in their order; `name:text:200` without any. `resource` is the
 * schematic's names of the resource (its spoken singular, its PascalCase singular).
 */
function parseFields(specs, resource) {
  const list = specs === undefined || specs.length === 0 ? ['name:text:200'] : specs;
  const fields = list.map((spec) => parseField(String(spec), resource));
  const seen = new Set();
  for (const field of fields) {
    if (seen.has(field.column)) throw new FieldError(`Two fields are named ${field.name} (column ${field.column})`);
    seen.add(field.column);
  }
  return fields;
}

function parseField(spec, resource) {
  const match = FIELD.exec(spec);
  if (match === null) {
    throw new FieldError(
      `The field "${spec}" is not <name>[?]:<kind>[:<argument>] with a camelCase name, e.g. "name:text:200" or "country?:pattern:^[A-Z]{2}$"`,
    );
  }
  const { name, optional, kind, argument } = match.groups;
  const column = name.replace(/([A-Z])/g, '_$1').toLowerCase();
  if (RESERVED.has(name.toLowerCase()) || RESERVED.has(column)) {
    throw new FieldError(`The field name "${name}" is a key word of TypeScript or SQL, or the id: choose another`);
  }
  if (!Object.hasOwn(KINDS, kind)) {
    throw new FieldError(`The field "${spec}" has the kind "${kind}": one of ${Object.keys(KINDS).join(', ')}`);
  }
  const spoken = words(name);
  const field = {
    name,
    column,
    spoken,
    a: `${article(spoken)} ${spoken}`,
    optional: optional === '?',
    resource: resource.spoken,
    Resource: resource.Singular,
  };
  const made = KINDS[kind](field, argument);
  const options = [...made.options, ...(field.optional ? ['optional: true'] : [])];
  return {
    ...field,
    ...made,
    kind,
    decorator: `${made.preset}(${options.length === 0 ? '' : `{ ${options.join(', ')} }`})`,
    description:
      (made.description ?? `The ${spoken} of the ${resource.spoken}: ${made.rule}.`) +
      (field.optional ? ' Omit it rather than send null.' : ''),
    sqlite: made.sqlite ?? `${made.sqliteType}${field.optional ? '' : ' NOT NULL'}`,
    postgres: `${made.postgresType}${field.optional ? '' : ' NOT NULL'}`,
    declared: `${made.declared}${field.optional ? '.optional()' : ''}`,
    invalid: [
      ...(field.optional
        ? [[`a null ${spoken}`, 'null', made.typeMessage]]
        : [
            [`no ${spoken}`, 'undefined', `${name} is required`],
            [`a null ${spoken}`, 'null', `${name} is required`],
          ]),
      ...made.invalid,
    ],
  };
}

module.exports = { parseFields, FieldError };
