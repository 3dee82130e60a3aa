import { SchematicTestRunner, UnitTestTree } from '@angular-devkit/schematics/testing';
import { HostTree } from '@angular-devkit/schematics';
import { join } from 'node:path';

/** The resource schematic on a tree holding only what the refusal reads: a metric the service has. */
describe('generate:resource names', () => {
  const runner = new SchematicTestRunner('plant-store', join(__dirname, '..', 'schematics', 'collection.json'));

  it('should refuse a resource whose creates counter would be a metric the service already has', async () => {
    const tree = new UnitTestTree(new HostTree());
    tree.create(
      'src/error-responses/database-errors.metrics.ts',
      "export const NAME = 'plant_store_database_errors_total';\n",
    );
    await expect(runner.runSchematic('resource', { name: 'database-errors' }, tree)).rejects.toThrow(
      'The service already has a metric plant_store_database_errors_total (/src/error-responses/database-errors.metrics.ts): choose another name',
    );
  });
});
