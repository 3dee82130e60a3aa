import { ValidateBy, ValidationOptions } from 'class-validator';

// RFC 3339 section 5.6 `date-time`: full date, `T`, full time with seconds, optional fraction, `Z` or
// a numeric offset (`T` and `Z` in either case). No date alone, no Unix time, no other spelling.
const DATE_TIME =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]{1,9})?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))$/;

/**
 * The instant an RFC 3339 date-time names, in Unix milliseconds; undefined for anything else,
 * including dates that do not exist (`2026-02-30`, which `Date.parse` would roll over to March) and
 * the leap second `:60`, which JavaScript dates cannot hold.
 */
export function parseRfc3339(value: string): number | undefined {
  const parts = DATE_TIME.exec(value);
  if (parts === null) return undefined;
  const [year, month, day, hour, minute, second, offsetHour = '0', offsetMinute = '0'] = parts.slice(1).map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || Number(offsetHour) > 23 || Number(offsetMinute) > 59) {
    return undefined;
  }
  const ms = Date.parse(value.toUpperCase());
  return Number.isNaN(ms) ? undefined : ms;
}

/** The property is an RFC 3339 date-time (`parseRfc3339`). */
export function IsRfc3339DateTime(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isRfc3339DateTime',
      validator: { validate: (value: unknown) => typeof value === 'string' && parseRfc3339(value) !== undefined },
    },
    options,
  );
}
