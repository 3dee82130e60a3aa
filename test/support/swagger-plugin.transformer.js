// Runs the @nestjs/swagger compiler plugin under ts-jest with the options `nest build` uses
// (nest-cli.json), so tests see the same OpenAPI document as the built service.
const transformer = require('@nestjs/swagger/plugin');
const nestCli = require('../../nest-cli.json');

const { options } = nestCli.compilerOptions.plugins.find((plugin) => plugin.name === '@nestjs/swagger');

module.exports.name = 'nestjs-swagger-transformer';
// Part of ts-jest's cache key: a change of options recompiles.
module.exports.version = JSON.stringify(options);
module.exports.factory = (cs) => transformer.before(options, cs.program);
