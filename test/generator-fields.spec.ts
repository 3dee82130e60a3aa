// The generator's `--field` specs (schematics/resource/fields.js): what each kind makes, and what is
// refused before anything is written. scripts/check-generator.sh builds and tests a resource of every kind.
interface GeneratedField {
  name: string;
  column: string;
  optional: boolean;
  decorator: string;
  sqlite: string;
  postgres: string;
  declared: string;
  values: string[];
  invalid: [label: string, value: string, message: string][];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parseFields } = require('../schematics/resource/fields') as {
  parseFields: (specs: string[] | undefined, resource: { spoken: string; Singular: string }) => GeneratedField[];
};

const SUPPLIER = { spoken: 'supplier', Singular: 'Supplier' };
const parse = (...specs: string[]) => parseFields(specs, SUPPLIER);
/** A TypeScript string literal as the generator writes it, back to its value. */
const valueOf = (literal: string): string => JSON.parse(literal) as string;

describe('the generator’s --field specs', () => {
  it('should make a required name of 1 to 200 characters without any', () => {
    const [name] = parseFields(undefined, SUPPLIER);
    expect([name.decorator, name.sqlite, name.postgres]).toEqual([
      'TextProperty({ max: 200 })',
      'TEXT NOT NULL',
      'TEXT NOT NULL',
    ]);
  });

  it.each([
    ['sowBy?:text:3..20', 'sow_by', 'TextProperty({ min: 3, max: 20, optional: true })', 'TEXT', 'TEXT'],
    ['count:integer:-5..5', 'count', 'IntegerProperty({ min: -5, max: 5 })', 'INTEGER NOT NULL', 'INTEGER NOT NULL'],
    [
      'inStock?:boolean',
      'in_stock',
      'BooleanProperty({ optional: true })',
      'INTEGER CHECK (in_stock IN (0, 1))',
      'BOOLEAN',
    ],
    ['stock:int64', 'stock', 'Int64Property()', 'INTEGER NOT NULL', 'BIGINT NOT NULL'],
    [
      'country?:pattern:^[A-Z]{2}$',
      'country',
      'PatternProperty({ pattern: /^[A-Z]{2}$/, max: 2, optional: true })',
      'TEXT',
      'TEXT',
    ],
    [
      'code:pattern:^(ab|c){1,3}-x?$',
      'code',
      'PatternProperty({ pattern: /^(ab|c){1,3}-x?$/, max: 8 })',
      'TEXT NOT NULL',
      'TEXT NOT NULL',
    ],
    [
      'slug:pattern:40:^[a-z]+$',
      'slug',
      'PatternProperty({ pattern: /^[a-z]+$/, max: 40 })',
      'TEXT NOT NULL',
      'TEXT NOT NULL',
    ],
    [
      'size:oneof:small|medium|large',
      'size',
      'OneOfProperty({ values: ["small", "medium", "large"] })',
      'TEXT NOT NULL',
      'TEXT NOT NULL',
    ],
  ])('should make %s a column %s, its preset and both stores’ types', (spec, column, decorator, sqlite, postgres) => {
    const [field] = parse(spec);
    expect([field.column, field.decorator, field.sqlite, field.postgres]).toEqual([
      column,
      decorator,
      sqlite,
      postgres,
    ]);
  });

  it('should declare each kind’s column once, in the domain file, `.optional()` when it may be absent', () => {
    const declared = parse(
      'name:text:200',
      'sowBy?:text:3..20',
      'count:integer:-5..5',
      'inStock?:boolean',
      'stock:int64',
      'country?:pattern:^[A-Z]{2}$',
      'size:oneof:small|medium|large',
    ).map((field) => `${field.name}: ${field.declared}`);
    expect(declared).toEqual([
      'name: column.text()',
      'sowBy: column.text().optional()',
      'count: column.integer()',
      'inStock: column.boolean().optional()',
      'stock: column.int64()',
      'country: column.text().optional()',
      'size: column.text<SupplierSize>()',
    ]);
  });

  it('should make a pattern’s two examples distinct, within its max, matching it, and the same every time', () => {
    const [field] = parse('code:pattern:12:^[A-Z]{2}(-[0-9]+)*$');
    const examples = field.values.map(valueOf);
    expect(new Set(examples).size).toBe(2);
    for (const example of examples) expect(example).toMatch(/^[A-Z]{2}(-[0-9]+)*$/);
    for (const example of examples) expect(example.length).toBeLessThanOrEqual(12);
    expect(parse('code:pattern:12:^[A-Z]{2}(-[0-9]+)*$')[0].values).toEqual(field.values);
    const [, off] = field.invalid.find(([label]) => label === 'a code off its pattern') ?? [];
    expect(valueOf(off ?? '"A"')).not.toMatch(/^[A-Z]{2}(-[0-9]+)*$/);
  });

  it('should give an optional field a null case with its rule’s message, and a required one "is required"', () => {
    const [country, size] = parse('country?:pattern:^[A-Z]{2}$', 'size:oneof:s|m');
    expect(country.invalid[0]).toEqual(['a null country', 'null', 'country must be a string']);
    expect(size.invalid.slice(0, 2)).toEqual([
      ['no size', 'undefined', 'size is required'],
      ['a null size', 'null', 'size is required'],
    ]);
  });

  it.each([
    ['name', 'is not <name>[?]:<kind>[:<argument>]'],
    ['Name:text:200', 'is not <name>[?]:<kind>[:<argument>]'],
    ['name:text', 'text takes its length'],
    ['name:string:200', 'has the kind "string": one of text, integer, boolean, int64, pattern, oneof'],
    ['count:integer:10', 'integer takes its bounds'],
    ['count:integer:0..2147483648', 'integer takes its bounds'],
    ['done:boolean:yes', 'boolean takes nothing more'],
    ['code:pattern:[A-Z]{2}', 'pattern takes a pattern written ^…$'],
    ['code:pattern:^a|b$', 'must hold the whole value'],
    ['code:pattern:^[A-Z]{2}', 'must hold the whole value'],
    ['code:pattern:^[\\w-.]$', 'is not valid with the u flag'],
    ['code:pattern:^(a$', 'is not a regular expression'],
    ['code:pattern:^[a-z]+$', 'has no longest match to take as its max length: give one, "code:pattern:100:^[a-z]+$"'],
    ['size:oneof:small', 'oneof takes two or more distinct values'],
    ['size:oneof:a|a', 'oneof takes two or more distinct values'],
    ['id:int64', 'is a key word of TypeScript or SQL, or the id'],
    ['order:text:20', 'is a key word of TypeScript or SQL, or the id'],
    ['default:text:20', 'is a key word of TypeScript or SQL, or the id'],
  ])('should refuse %s, saying what it wanted', (spec, message) => {
    expect(() => parse(spec)).toThrow(message);
  });

  it('should refuse two fields of one name', () => {
    expect(() => parse('name:text:20', 'name?:text:10')).toThrow('Two fields are named name');
  });
});
