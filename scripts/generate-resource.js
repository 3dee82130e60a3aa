// `npm run generate:resource -- <name> [--dry-run]`: the repository's `resource`
// schematic through the Nest CLI, exactly as `nest g -c plant-store-schematics resource <name>`, then
// `npm run openapi` so openapi.json holds the new routes. `plant-store-schematics` is this
// repository's schematics/ folder, linked into node_modules by npm (a relative collection path would
// put the schematics CLI in its dry-run debug mode). The Nest CLI prints a failed schematic's error
// but exits 0, so success is read off the module file the schematic writes.
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const args = process.argv.slice(2);
const name = args.find((arg) => !arg.startsWith('-'));
if (name === undefined) {
  console.error(
    'Usage: npm run generate:resource -- <name>   (plural, lower case words joined by "-", e.g. garden-beds)',
  );
  process.exit(2);
}

function run(command, commandArgs) {
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (existsSync(join(root, 'src', name))) {
  console.error(`src/${name} exists already: choose another name, or remove it first`);
  process.exit(1);
}

const nest = join(root, 'node_modules', '.bin', 'nest');
run(nest, ['generate', '--collection', 'plant-store-schematics', 'resource', ...args]);
if (args.includes('--dry-run') || args.includes('-d')) process.exit(0);
if (!existsSync(join(root, 'src', name, `${name}.module.ts`))) {
  console.error(`The schematic did not create src/${name}/${name}.module.ts (see its message above)`);
  process.exit(1);
}
run('npm', ['run', 'openapi']);
console.log(`openapi.json refreshed. The ${name} resource is ready: npm test, then edit its fields.`);
