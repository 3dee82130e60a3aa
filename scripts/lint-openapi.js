'use strict';
// `npm run lint`, the document's part: openapi.json against the linters API teams run in CI, offline.
// - Redocly's recommended rules (redocly.yaml): no error, no warning.
// - Spectral (.spectral.yaml): spectral:oas with no error and no warning; the OWASP ruleset with no error
//   (its warnings are advice, printed: e.g. the public probes declare no 401).
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');

const root = join(__dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const DOCUMENT = 'openapi.json';
// Nothing leaves the machine: no update check, no notices (redocly.yaml turns its telemetry off).
const env = { ...process.env, REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };

const redocly = spawnSync(bin('redocly'), ['lint', DOCUMENT, '--max-problems=50'], {
  cwd: root,
  env,
  stdio: 'inherit',
});
let failed = redocly.status !== 0;

const spectral = spawnSync(bin('spectral'), ['lint', DOCUMENT, '--format=json', '--quiet', '--fail-severity=hint'], {
  cwd: root,
  env,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});
let findings;
try {
  findings = JSON.parse(spectral.stdout);
} catch {
  process.stderr.write(spectral.stdout + spectral.stderr);
  console.error('spectral did not run');
  process.exit(1);
}
const SEVERITY = ['error', 'warning', 'info', 'hint'];
const failing = (finding) =>
  finding.severity === 0 || (finding.severity === 1 && !String(finding.code).startsWith('owasp:'));
for (const finding of findings) {
  const where = `${DOCUMENT}:${finding.range.start.line + 1} ${finding.path.join('.')}`;
  const line = `${SEVERITY[finding.severity]} ${finding.code} ${finding.message} (${where})`;
  if (failing(finding)) console.error(line);
}
const errors = findings.filter(failing).length;
const advice = findings.length - errors;
console.log(
  `spectral: ${errors} failing, ${advice} OWASP warning(s) as advice (npx spectral lint ${DOCUMENT} lists them)`,
);
failed ||= errors > 0;
process.exit(failed ? 1 : 0);
