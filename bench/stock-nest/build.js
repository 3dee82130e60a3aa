'use strict';
// Compiles the stock-nest peer to node_modules/.cache with transpileModule and this folder's tsconfig.json
// (decorator metadata as `nest build` emits it); `node bench/stock-nest/build.js` prints its main.js.
const { mkdirSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const ts = require('typescript');

const OUT = join(__dirname, '..', '..', 'node_modules', '.cache', 'plant-store-bench', 'stock-nest');
const STOCK_NEST_MAIN = join(OUT, 'main.js');

/** Writes the compiled peer and returns the path of its main.js. */
function buildStockNest() {
  const { config, error } = ts.readConfigFile(join(__dirname, 'tsconfig.json'), ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, __dirname);
  const compilerOptions = { ...options, noEmit: false, sourceMap: false };
  mkdirSync(OUT, { recursive: true });
  for (const file of readdirSync(__dirname).filter((name) => name.endsWith('.ts'))) {
    const source = readFileSync(join(__dirname, file), 'utf8');
    const { outputText } = ts.transpileModule(source, { compilerOptions, fileName: file });
    writeFileSync(join(OUT, file.replace(/\.ts$/, '.js')), outputText);
  }
  return STOCK_NEST_MAIN;
}

if (require.main === module) console.log(buildStockNest());

module.exports = { STOCK_NEST_MAIN, buildStockNest };
