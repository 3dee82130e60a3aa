// A Jest reporter: when TEST_DATABASE_URL is unset, says at the end of the run how many PostgreSQL
// tests were skipped and how to run them, so a green local run is not mistaken for full coverage.
class SkippedPostgresReporter {
  onRunComplete(_contexts, results) {
    if (process.env.TEST_DATABASE_URL) return;
    let skipped = 0;
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        if (test.status === 'pending' && test.fullName.includes('PostgreSQL')) skipped += 1;
      }
    }
    if (skipped === 0) return;
    process.stderr.write(
      `\n${skipped} PostgreSQL tests were skipped: TEST_DATABASE_URL is not set. ` +
        'Run the whole suite with a throwaway database: npm run test:postgres\n\n',
    );
  }
}

module.exports = SkippedPostgresReporter;
