/**
 * The `resource` schematic: a whole resource in the house's one pattern (create-once, a keyset list,
 * get and delete by id; an int64 key chosen by the client; its fields from `--field` specs, fields.js,
 * or a `name` text field without any; its options, schema.json: `--answer-without-id`,
 * `--bare-created-event`, `--group-commit`, `--publish-events`), the way Nest's own `resource` schematic
 * makes a CRUD skeleton: templates under `files/`, the module registered by code. It also registers
 * the feature's migrations, and formats what it wrote with the project's Prettier settings.
 *
 * `npm run generate:resource -- <name>` runs it through the Nest CLI and then refreshes openapi.json
 * (`scripts/generate-resource.js`). `scripts/check-generator.sh` proves in CI that what it makes
 * builds, lints and passes its tests on both stores.
 */
const { apply, applyTemplates, chain, mergeWith, SchematicsException, url } = require('@angular-devkit/schematics');
const pluralize = require('pluralize');
const ts = require('typescript');
const { FieldError, parseFields } = require('./fields');

const NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

/** The names of one resource, every way the templates spell them. */
function namesOf(options) {
  const name = String(options.name ?? '')
    .trim()
    .replace(/^\/+|\/+$/g, '');
  if (!NAME.test(name)) {
    throw new SchematicsException(
      `The resource name "${name}" must be lower case words joined by "-", starting with a letter (e.g. "garden-beds")`,
    );
  }
  const singular =
    options.singular ??
    name
      .split('-')
      .slice(0, -1)
      .concat(pluralize.singular(name.split('-').pop()))
      .join('-');
  if (!NAME.test(singular)) throw new SchematicsException(`The singular "${singular}" must be spelled like the name`);
  const words = (kebab) => kebab.split('-');
  const pascal = (kebab) =>
    words(kebab)
      .map((w) => w[0].toUpperCase() + w.slice(1))
      .join('');
  const camel = (kebab) => pascal(kebab)[0].toLowerCase() + pascal(kebab).slice(1);
  const spoken = words(singular).join(' ');
  return {
    name, // garden-beds: folder, route, tag, migration prefix
    singular, // garden-bed: the files of one item
    Plural: pascal(name), // GardenBeds: module, controller, service, repository
    Singular: pascal(singular), // GardenBed: domain type, DTOs
    plural: camel(name), // gardenBeds
    single: camel(singular), // gardenBed
    table: words(name).join('_'), // garden_beds
    CONSTANT: words(name).join('_').toUpperCase(), // GARDEN_BEDS
    SINGULAR_CONSTANT: words(singular).join('_').toUpperCase(), // GARDEN_BED
    spoken, // garden bed
    spokenPlural: words(name).join(' '), // garden beds
    a: /^[aeiou]/.test(spoken) ? 'an' : 'a',
  };
}

function today() {
  return new Date().toISOString().slice(0, 10);
}

/**
 * The `--field` specs: the `fields` option, or what `npm run generate:resource` hands over in
 * GENERATE_RESOURCE_FIELDS (a JSON array), as the Nest CLI passes no option it does not know.
 */
function fieldSpecs(options) {
  // The schematics CLI makes an option not given an empty array.
  if (options.fields !== undefined && options.fields.length > 0) return options.fields;
  const given = process.env.GENERATE_RESOURCE_FIELDS;
  if (given === undefined || given === '') return undefined;
  const specs = JSON.parse(given);
  if (!Array.isArray(specs) || !specs.every((spec) => typeof spec === 'string')) {
    throw new SchematicsException('GENERATE_RESOURCE_FIELDS must be a JSON array of field specs');
  }
  return specs;
}

/**
 * The resource's options (schema.json): given to the schematic, or what `npm run generate:resource`
 * hands over in GENERATE_RESOURCE_OPTIONS (a JSON object), for the reason of `fieldSpecs`.
 */
function resourceOptions(options) {
  const given = process.env.GENERATE_RESOURCE_OPTIONS;
  const handed = given === undefined || given === '' ? {} : JSON.parse(given);
  if (handed === null || typeof handed !== 'object' || Array.isArray(handed)) {
    throw new SchematicsException('GENERATE_RESOURCE_OPTIONS must be a JSON object of options');
  }
  const flag = (key) => options[key] === true || handed[key] === true;
  return {
    answerWithoutId: flag('answerWithoutId'),
    bareCreatedEvent: flag('bareCreatedEvent'),
    groupCommit: flag('groupCommit'),
    publishEvents: flag('publishEvents'),
    date: options.date ?? handed.date,
  };
}

/** "name", "name or tag", "name, size or tag". */
function listed(words) {
  return words.length === 1 ? words[0] : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}

/** The `@ApiProperty` options of a field in an answer without the id: the schema of the value, as stored. */
function answerProperty(field) {
  const option = (key) => field.options.find((entry) => entry.startsWith(`${key}: `))?.slice(key.length + 2);
  const schema = {
    text: [`maxLength: ${option('max')}`],
    pattern: [`maxLength: ${option('max')}`, `pattern: ${JSON.stringify(option('pattern')?.slice(1, -1))}`],
    integer: [`type: 'integer'`, `format: 'int32'`, `minimum: ${option('min')}`, `maximum: ${option('max')}`],
    boolean: [],
    int64: ['...INT64_SCHEMA'],
    oneof: [`enum: ${option('values')}`],
  }[field.kind];
  const all = [...schema, ...(field.optional ? ['required: false'] : [])];
  return all.length === 0 ? '' : `{ ${all.join(', ')} }`;
}

/** What the templates write the fields with, beside the fields themselves. */
function fieldValues(fields) {
  const presets = new Map([['Int64Property', 'int64/int64-property.decorator']]);
  const paths = {
    TextProperty: 'text/text-property.decorator',
    IntegerProperty: 'integer/integer-property.decorator',
    BooleanProperty: 'boolean/boolean-property.decorator',
    PatternProperty: 'pattern/pattern-property.decorator',
    OneOfProperty: 'one-of/one-of-property.decorator',
  };
  for (const { preset } of fields) if (preset !== 'Int64Property') presets.set(preset, paths[preset]);
  const width = Math.max(2, ...fields.map((field) => field.column.length));
  return {
    fields,
    /** What a 409 says differs: "a different name or tag". */
    differs: `a different ${listed(fields.map((field) => field.spoken))}`,
    answerProperty,
    presets: [...presets].map(([name, path]) => ({ name, path })),
    unions: fields.filter((field) => field.declaration).map((field) => field.type),
    /** The CREATE TABLE's lines on `store`, the id's first, the names aligned. */
    ddl: (store, id) => [
      `${'id'.padEnd(width)} ${id}`,
      ...fields.map((field) => `${field.column.padEnd(width)} ${field[store]}`),
    ],
  };
}

/** The schematic's entry point (collection.json). */
function main(options) {
  const names = namesOf(options);
  const sourceRoot = (options.sourceRoot ?? 'src').replace(/\/+$/, '');
  const chosen = resourceOptions(options);
  const date = chosen.date ?? today();
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new SchematicsException(`The date "${date}" is not YYYY-MM-DD`);
  let fields;
  try {
    fields = parseFields(fieldSpecs(options), names);
  } catch (error) {
    if (error instanceof FieldError) throw new SchematicsException(error.message);
    throw error;
  }
  const values = {
    ...names,
    ...fieldValues(fields),
    ...chosen,
    date,
    sourceRoot,
    skipImport: options.skipImport === true,
    changed: [],
  };
  return (tree) => {
    const folder = `${sourceRoot}/${names.name}`;
    if (tree.getDir(folder).subfiles.length > 0 || tree.getDir(folder).subdirs.length > 0) {
      throw new SchematicsException(`${folder} already exists: choose another name, or remove it first`);
    }
    // Its creates counter, plant_store_<table>_total, must not be a metric the service already has:
    // prom-client would refuse the second one at start-up.
    const metric = `plant_store_${names.table}_total`;
    tree.getDir(sourceRoot).visit((path) => {
      if (path.endsWith('.ts') && tree.readText(path).includes(`'${metric}'`)) {
        throw new SchematicsException(`The service already has a metric ${metric} (${path}): choose another name`);
      }
    });
    const written = [];
    const templates = apply(url('./files'), [
      applyTemplates(values),
      (source) => {
        source.visit((path) => written.push(path));
        return source;
      },
    ]);
    return chain([
      mergeWith(templates),
      values.skipImport ? () => undefined : register(values),
      formatted(written, values),
      (_tree, context) => {
        context.logger.info(
          `The ${names.name} resource: ${folder} and its tests` +
            (values.skipImport
              ? ''
              : ', registered in app.module.ts and app.migrations.ts (and its tag in the document)') +
            '. Then refresh openapi.json: `npm run openapi` (npm run generate:resource does it).',
        );
      },
    ]);
  };
}

/** The two registration points of the composition root, edited by code: the module and its migrations. */
function register(values) {
  return (tree) => {
    const root = values.sourceRoot;
    if (!/\bconst webhooks = WebhooksModule\.forRoot\(/.test(tree.readText(`${root}/app.module.ts`))) {
      throw new SchematicsException(
        `${root}/app.module.ts has no \`const webhooks = WebhooksModule.forRoot()\` to hand the resource's module`,
      );
    }
    addToArray(tree, `${root}/app.module.ts`, {
      isTarget: (node) =>
        ts.isPropertyAssignment(node) &&
        node.name.getText() === 'imports' &&
        ts.isArrayLiteralExpression(node.initializer),
      what: 'the `imports` array of AppModule',
      // `webhooks`: AppModule's WebhooksModule, the publisher its events port may bind to (as plants').
      element: `${values.Plural}Module.register(webhooks)`,
      importLine: `import { ${values.Plural}Module } from './${values.name}/${values.name}.module';`,
    });
    declareTag(tree, `${root}/openapi/openapi-document.ts`, values);
    addToArray(tree, `${root}/app.migrations.ts`, {
      isTarget: (node) =>
        ts.isVariableDeclaration(node) &&
        node.name.getText() === 'APP_MIGRATIONS' &&
        node.initializer !== undefined &&
        ts.isArrayLiteralExpression(node.initializer),
      what: 'the APP_MIGRATIONS array',
      element: `...${values.CONSTANT}_MIGRATIONS`,
      importLine: `import { ${values.CONSTANT}_MIGRATIONS } from './${values.name}/persistence/${values.name}.migrations';`,
    });
  };
}

/** Appends `element` to the one array `isTarget` finds in `path`, and `importLine` after the last import. */
function addToArray(tree, path, { isTarget, what, element, importLine }) {
  const text = tree.readText(path);
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if (isTarget(node)) found.push(node);
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (found.length !== 1) {
    throw new SchematicsException(`Found ${found.length} places for ${what} in ${path}, expected exactly one`);
  }
  const array = found[0].initializer;
  const elements = array.elements;
  const close = array.getEnd() - 1; // the `]`
  const insertion = elements.length === 0 ? element : elements.hasTrailingComma ? `${element},` : `, ${element}`;
  const imports = source.statements.filter(ts.isImportDeclaration);
  const afterImports = imports.length === 0 ? 0 : imports[imports.length - 1].getEnd();
  const recorder = tree.beginUpdate(path);
  recorder.insertLeft(afterImports, `${afterImports === 0 ? '' : '\n'}${importLine}${afterImports === 0 ? '\n' : ''}`);
  recorder.insertLeft(close, insertion);
  tree.commitUpdate(recorder);
}

/**
 * The resource's tag among the document's declared tags (the `.addTag(…)` calls of the document
 * builder), after the last one: the OpenAPI linters want every operation's tag declared. A tree
 * whose document declares no tags is left as it is.
 */
function declareTag(tree, path, values) {
  if (!tree.exists(path)) return;
  const source = ts.createSourceFile(path, tree.readText(path), ts.ScriptTarget.Latest, true);
  let last;
  const visit = (node) => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'addTag' &&
      (last === undefined || node.getEnd() > last.getEnd())
    ) {
      last = node;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (last === undefined) return;
  const what = values.spokenPlural[0].toUpperCase() + values.spokenPlural.slice(1);
  const recorder = tree.beginUpdate(path);
  recorder.insertLeft(last.getEnd(), `\n.addTag('${values.name}', '${what}: create, list, read and delete them.')`);
  tree.commitUpdate(recorder);
  values.changed.push(path);
}

/** Formats every file this schematic wrote or changed with the project's Prettier settings. */
function formatted(written, values) {
  return async (tree) => {
    const prettier = require('prettier');
    const paths = [...written, ...values.changed];
    if (!values.skipImport) paths.push(`${values.sourceRoot}/app.module.ts`, `${values.sourceRoot}/app.migrations.ts`);
    for (const path of paths) {
      const config = (await prettier.resolveConfig(`${process.cwd()}/${path.replace(/^\/+/, '')}`)) ?? {};
      tree.overwrite(path, await prettier.format(tree.readText(path), { ...config, filepath: path }));
    }
  };
}

module.exports = { main, namesOf };
