// The Node that runs the suite (CI runs it on two lines), printed by the process that reads this file.
console.log(`jest: Node ${process.version} (${process.execPath})`);

/** @type {import('jest').Config} */
module.exports = {
  rootDir: '.',
  moduleFileExtensions: ['js', 'json', 'ts'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      {
        astTransformers: { before: ['<rootDir>/test/support/swagger-plugin.transformer.js'] },
        // 151002: ts-jest notes that tsconfig's `module: node20` is only honoured in isolatedModules
        // mode. We keep the type-checking mode (the Swagger plugin needs the program): there ts-jest
        // compiles our files as CommonJS with a resolution that reads `exports` maps, as tsc does.
        diagnostics: { ignoreCodes: [151002] },
      },
    ],
  },
  // tsc (module node20) wants `.js` on relative dynamic imports; Jest runs the `.ts` beside them.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 30000,
  setupFiles: ['<rootDir>/test/support/quiet-nest-logger.js'],
  reporters: ['default', '<rootDir>/test/support/skipped-postgres-reporter.js'],
};
