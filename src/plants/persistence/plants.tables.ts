import { Int64Column } from '../../database/tables';

/** The `plants` table, as the query builder sees it (created by `plants.migrations.ts`). */
export interface PlantsTable {
  id: Int64Column;
  name: string;
  tag: string | null;
}

declare module '../../database/tables' {
  interface Tables {
    plants: PlantsTable;
  }
}
