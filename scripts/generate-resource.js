// `npm run generate:resource -- <name> [--field <spec>]… [<option>]… [--dry-run]`: the repository's `resource`
// schematic through the Nest CLI, exactly as `nest g -c plant-store-schematics resource <name>`, then
// `npm run openapi` so openapi.json holds the new routes. `plant-store-schematics` is this
// repository's schematics/ folder, linked into node_modules by npm (a relative collection path would
// put the schematics CLI in its dry-run debug mode). The Nest CLI prints a failed schematic's error
// but exits 0, so success is read off the module file the schematic writes.
//
// Each `--field` (`name:text:200`, `'country?:pattern:^[A-Z]{2}$'`; schematics/resource/fields.js) goes
// to the schematic in GENERATE_RESOURCE_FIELDS, a JSON array: the Nest CLI refuses an option it does
// not know, and runs the schematic through a shell that would read a pattern's `$`, `[` and `|`.
// The resource's options (OPTIONS below, schematics/resource/schema.json) go the same way, in
// GENERATE_RESOURCE_OPTIONS, a JSON object.
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
/** The flags a resource may take, each the schematic's option of that name. */
const OPTIONS = {
  '--answer-without-id': 'answerWithoutId',
  '--bare-created-event': 'bareCreatedEvent',
  '--group-commit': 'groupCommit',
  '--publish-events': 'publishEvents',
};
const fields = [];
const options = {};
const args = [];
const given = process.argv.slice(2);
for (let i = 0; i < given.length; i++) {
  if (given[i] === '--field' && i + 1 < given.length) fields.push(given[++i]);
  else if (given[i].startsWith('--field=')) fields.push(given[i].slice('--field='.length));
  else if (Object.hasOwn(OPTIONS, given[i])) options[OPTIONS[given[i]]] = true;
  else if (given[i] === '--date' && i + 1 < given.length) options.date = given[++i];
  else if (given[i].startsWith('--date=')) options.date = given[i].slice('--date='.length);
  else args.push(given[i]);
}
const name = args.find((arg) => !arg.startsWith('-'));
if (name === undefined || given.at(-1) === '--field' || given.at(-1) === '--date') {
  console.error(
    'Usage: npm run generate:resource -- <name> [--field <name>[?]:<kind>[:<argument>]]… [<option>]…\n' +
      '  <name>: plural, lower case words joined by "-", e.g. garden-beds\n' +
      '  kinds: name:text:200  count:integer:1..10000  done:boolean  stock:int64\n' +
      "         'country:pattern:^[A-Z]{2}$' (or pattern:<max>:^…$)  'size:oneof:small|medium|large'\n" +
      '  a "?" after the name makes the field optional; without --field, a name:text:200\n' +
      '  options: --answer-without-id (the create answers the fields alone), --bare-created-event (the\n' +
      '  created event is the new value itself, no envelope), --group-commit (writes commit in batches),\n' +
      '  --publish-events (its events on), --date YYYY-MM-DD (of its first migration)',
  );
  process.exit(2);
}

function run(command, commandArgs, env = process.env) {
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit', env });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (existsSync(join(root, 'src', name))) {
  console.error(`src/${name} exists already: choose another name, or remove it first`);
  process.exit(1);
}

const nest = join(root, 'node_modules', '.bin', 'nest');
run(nest, ['generate', '--collection', 'plant-store-schematics', 'resource', ...args], {
  ...process.env,
  GENERATE_RESOURCE_FIELDS: JSON.stringify(fields),
  GENERATE_RESOURCE_OPTIONS: JSON.stringify(options),
});
if (args.includes('--dry-run') || args.includes('-d')) process.exit(0);
if (!existsSync(join(root, 'src', name, `${name}.module.ts`))) {
  console.error(`The schematic did not create src/${name}/${name}.module.ts (see its message above)`);
  process.exit(1);
}
// Not registered in the app (`--skip-import`), it is not in the document: nothing to refresh.
if (args.includes('--skip-import')) process.exit(0);
run('npm', ['run', 'openapi']);
console.log(`openapi.json refreshed. The ${name} resource is ready: npm test -- ${name}.`);
