import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** Whether a process with this id exists (one of another user's would answer EPERM: alive too). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs Jest on the fixture file alone; resolves with its exit code and what it printed. */
function runFixture(dir: string): Promise<{ code: number | null; output: string }> {
  // --forceExit: Jest ends when the file is done, as a worker Jest stops does, whatever the file left
  // running; without it, a service left behind would hold this Jest open instead of outliving it.
  const args = [
    join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
    '--config',
    join(ROOT, 'jest.config.js'),
    '--testRegex',
    'forgotten-service\\.fixture\\.ts$',
    // Compiled without type-checking (service-process.ts is checked where the suite imports it):
    // building the checker's program was most of this Jest's time; what is tested here is the process.
    '--transform',
    JSON.stringify({ '^.+\\.ts$': ['ts-jest', { isolatedModules: true, diagnostics: false }] }),
    '--runInBand',
    '--forceExit',
    '--ci',
  ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, FORGOTTEN_SERVICE_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

describe('test/support/service-process.ts', () => {
  it('should leave no service running once the Jest that started it ends, after a failed beforeAll', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-forgotten-'));
    let pid: number | undefined;
    try {
      const run = await runFixture(dir);
      pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
      expect(run.output).toContain('the setup failed after the service started');
      expect(run.code).toBe(1);
      expect(pid).toBeGreaterThan(0);
      expect(isAlive(pid)).toBe(false);
    } finally {
      if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
