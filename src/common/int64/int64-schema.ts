import { INT64_MIN, INT64_MAX } from './is-int64.decorator';

/**
 * The schema of an int64 in the document. A JSON document is written from JavaScript numbers: the
 * bounds are the int64 range's ends as doubles, -2^63 exactly and 2^63 (the nearest to 2^63 - 1),
 * so they never exclude a valid id; `format: int64` states the exact range.
 */
export const INT64_SCHEMA = {
  type: 'integer',
  format: 'int64',
  minimum: Number(INT64_MIN),
  maximum: Number(INT64_MAX),
} as const;
