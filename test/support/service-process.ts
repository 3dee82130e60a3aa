import { ChildProcess, ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';

export const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');

/** The Node flags the service ships with: those of `npm start` (the Dockerfile's CMD is held to them). */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a script of the repository's, shared with the benches
export const { SERVICE_NODE_FLAGS } = require('../../scripts/service-flags') as { SERVICE_NODE_FLAGS: string[] };

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  /** Everything it printed. */
  output: () => string;
  /** The JSON log lines it printed, parsed. */
  logs: () => Record<string, unknown>[];
  /** Sends `signal` and resolves with the exit code (null when killed by the signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// Every service a test file started that has not exited yet: killed after the file's last hook, so
// that a failed beforeAll, a start that timed out or a forgotten stop leaves no service behind Jest.
// The module is loaded again for each test file, so this afterAll belongs to the file importing it.
const running = new Set<ChildProcess>();
afterAll(async () => {
  const exits = [...running].map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(exits);
});

/** `node dist/main.js` with the service's flags, counted in `running` until it exits. */
function spawnService(env: NodeJS.ProcessEnv): ChildProcessByStdio<null, Readable, Readable> {
  assertBuilt();
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, MAIN], {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

function assertBuilt(): void {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` (npm test does it first)`);
}

/** WEBHOOK_SECRETS_KEY on PostgreSQL, where an admin credential requires one (a test's own value, '' for none, wins). */
export const PROCESS_SECRETS_KEY = Buffer.alloc(32, 0x5a).toString('base64');

function childEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  // Only what the test gives, plus PATH: the service must not pick up the developer's own settings.
  const key = env.DATABASE_URL?.startsWith('postgres') ? { WEBHOOK_SECRETS_KEY: PROCESS_SECRETS_KEY } : {};
  return { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', LOG_FORMAT: 'json', ...key, ...env };
}

/** The JSON lines of a log, parsed; other lines are skipped. */
export function jsonLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Starts the built service (`node dist/main.js`) and waits until it listens. */
export function startService(env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const child = spawnService(env);
  let output = '';
  // 'close', not 'exit': by then everything it wrote to stdout and stderr has been read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service did not start in time:\n${output}`));
    }, 20000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /[Ll]istening on (http:\/\/[^;\s"]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({
          child,
          url: match[1],
          output: () => output,
          logs: () => jsonLines(output),
          stop: (signal = 'SIGTERM') => {
            child.kill(signal);
            return exited;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${output}`));
    });
  });
}

/** Runs the built service expecting it to refuse to start; resolves with its exit code and stderr. */
export function runUntilExit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawnService(env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, stdout });
    }),
  );
}
