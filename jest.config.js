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
    '^.+\\.ts$': ['ts-jest', { astTransformers: { before: ['<rootDir>/test/support/swagger-plugin.transformer.js'] } }],
  },
  testTimeout: 30000,
  setupFiles: ['<rootDir>/test/support/quiet-nest-logger.js'],
  reporters: ['default', '<rootDir>/test/support/skipped-postgres-reporter.js'],
};
