// Nest's static Logger is silent in tests: what a test provokes on purpose (PostgreSQL cut, a
// development token made) is not a warning about the run. An app built by createTestApp logs to its
// own CapturingLogger, where tests read it; a child process (`node dist/main.js`) logs as in production.
const { Logger } = require('@nestjs/common');
Logger.overrideLogger(false);
