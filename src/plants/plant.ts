import { column, ValueOf } from '../database/columns';

/**
 * A plant's fields, each with the column that keeps it (snake_case; NULL for an absent
 * optional field): the one declaration the domain type, the store's row and its table type derive from.
 */
export const PLANT_COLUMNS = {
  id: column.int64(),
  name: column.text(),
  tag: column.text().optional(),
};

/** A plant as the service sees it: no decorators; an optional field absent, never null. */
export type Plant = ValueOf<typeof PLANT_COLUMNS>;
