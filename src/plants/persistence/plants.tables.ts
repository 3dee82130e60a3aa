import { TableOf } from '../../database/columns';
import { PLANT_COLUMNS } from '../plant';

declare module '../../database/tables' {
  interface Tables {
    /** The `plants` table (created by `plants.migrations.ts`), as the query builder sees it. */
    plants: TableOf<typeof PLANT_COLUMNS>;
  }
}
