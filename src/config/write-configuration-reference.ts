import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withReference } from './configuration-reference';

/** `npm run docs:config`: regenerates the reference in docs/configuration.md from the environment's schema. */
const file = join(__dirname, '..', '..', 'docs', 'configuration.md');
writeFileSync(file, withReference(readFileSync(file, 'utf8')));
console.log(`Wrote ${file}`);
