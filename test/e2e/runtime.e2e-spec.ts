import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '../support/service-process';

const ROOT = join(__dirname, '..', '..');

/** What ships runs as the tests and the bench run it. */
describe('the runtime the service ships with', () => {
  it('should start in the container with the Node flags of npm start, which the process tests and the bench use', () => {
    expect(SERVICE_NODE_FLAGS).toEqual(['--max-old-space-size=256', '--no-allocation-site-pretenuring']);
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(cmd ?? 'null')).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/main.js']);
  });

  it('should build the image on the Node line CI tests, and declare the tested lines in engines', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    const imageMajor = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile)?.[1];
    const ciVersion = /^IMAGE_NODE_VERSION=(\d+)\.\d+\.\d+$/m.exec(ci)?.[1];
    expect(imageMajor).toBeDefined();
    expect(ciVersion).toBe(imageMajor);
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } })
      .engines.node;
    expect(engines).toContain(`^${imageMajor}.`);
  });
});
