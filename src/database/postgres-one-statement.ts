import { CompiledQuery } from 'kysely';
import { fixedText } from './prepared-query';

/** The SQLSTATE of the guard that fails a fused statement whose write did not store every row. */
const GUARD_FAILED = '22012'; // division_by_zero

/** True when a fused statement failed on its guard alone: rolled back whole, its connection sound. */
export function isGuardFailure(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === GUARD_FAILED;
}

/** The fused statement's one row: the guard, and the published statement's rows as JSON. */
export type FusedRow = { guard: number; published: Record<string, unknown>[] | null };

/** A fused statement's text, by the two texts it is made of: both are fixed, so these are few. */
const fusedTexts = new Map<string, string | null>();

/**
 * `write` (a data-modifying statement) and `published` (`[WITH …] SELECT …`) as one autocommitted
 * statement: `write` as the CTE `insert_once_written`, then the WITH list of `published` hoisted beside
 * it (PostgreSQL takes a data-modifying CTE at the top level only), its `$n` placeholders renumbered
 * after `write`'s, then one FROM-less SELECT of a guard and the result of `published` as JSON. The guard
 * divides by zero when `write` returned other than `expectedRows` rows, and so rolls back everything the
 * statement wrote. `undefined` when `published` is of another form (then it cannot be fused). The text
 * is fixed for the pair: a prepared statement.
 */
export function fuseStatements(
  write: CompiledQuery,
  expectedRows: number,
  published?: CompiledQuery,
): CompiledQuery<FusedRow> | undefined {
  const key = `${write.sql}\u0000${published?.sql ?? ''}`;
  let text = fusedTexts.get(key);
  if (text === undefined) fusedTexts.set(key, (text = fusedText(write, published) ?? null));
  if (text === null) return undefined;
  const parameters = [...write.parameters, ...(published?.parameters ?? []), expectedRows];
  return fixedText(CompiledQuery.raw(text, parameters) as CompiledQuery<FusedRow>);
}

function fusedText(write: CompiledQuery, published?: CompiledQuery): string | undefined {
  const offset = write.parameters.length;
  let ctes: string[] = [];
  let result = 'NULL';
  if (published !== undefined) {
    const masked = maskQuoted(published.sql);
    if (masked === undefined) return undefined;
    // `$n` outside literals and quoted names, found in the masked text (of the same length).
    const renumbered = renumber(published.sql, masked, offset);
    const split = splitWith(renumbered, renumber(masked, masked, offset));
    if (split === undefined || !/^select\b/i.test(split.main)) return undefined;
    if (split.ctes.some((cte) => /^insert_once_written\b/i.test(cte))) return undefined;
    ctes = split.ctes;
    result = `(SELECT json_agg(t) FROM (${split.main}) t)`;
  }
  const count = `$${offset + (published?.parameters.length ?? 0) + 1}`;
  return (
    `WITH insert_once_written AS (${write.sql.trim()})${ctes.map((cte) => `, ${cte}`).join('')} ` +
    `SELECT (SELECT 1 / ((SELECT count(*) FROM insert_once_written) = ${count}::bigint)::int) AS guard, ` +
    `${result} AS published`
  );
}

/**
 * `sql` with the inside of each string literal and quoted name blanked out (the same length), so the
 * parentheses and `$n` left are the statement's own; `undefined` for a text with comments, dollar
 * quoting or backslash escapes, which are not looked into.
 */
function maskQuoted(sql: string): string | undefined {
  if (/--|\/\*|\$[^\d]|\\/.test(sql)) return undefined;
  let masked = '';
  for (let i = 0; i < sql.length; i++) {
    const quote = sql[i];
    if (quote !== "'" && quote !== '"') {
      masked += quote;
      continue;
    }
    let end = i + 1;
    // A doubled quote is one quote inside.
    while (end < sql.length && !(sql[end] === quote && sql[end + 1] !== quote)) end += sql[end] === quote ? 2 : 1;
    if (end >= sql.length) return undefined;
    masked += quote + ' '.repeat(end - i - 1) + quote;
    i = end;
  }
  return masked;
}

/** `sql` with each `$n` that `masked` shows outside quotes as `$(n + offset)`. */
function renumber(sql: string, masked: string, offset: number): string {
  let out = '';
  let from = 0;
  // Not a `$` inside an unquoted name (`a$1`): PostgreSQL takes `$` there as a letter.
  for (const match of masked.matchAll(/(?<![\w$])\$(\d+)/g)) {
    out += `${sql.slice(from, match.index)}$${Number(match[1]) + offset}`;
    from = match.index + match[0].length;
  }
  return out + sql.slice(from);
}

/**
 * `[WITH a AS (…), b AS (…)] main` as its CTEs (each `name AS (…)`) and `main`, read in `masked` (the
 * same text with its quoted parts blanked out); `undefined` for a WITH RECURSIVE or unbalanced
 * parentheses.
 */
function splitWith(sql: string, masked: string): { ctes: string[]; main: string } | undefined {
  const lead = sql.length - sql.trimStart().length;
  const text = sql.slice(lead).trimEnd();
  const scan = masked.slice(lead, lead + text.length);
  const start = /^with\s+/i.exec(scan);
  if (start === null) return { ctes: [], main: text };
  if (/^recursive\b/i.test(scan.slice(start[0].length))) return undefined;
  const ctes: string[] = [];
  let from = start[0].length;
  let at = from;
  for (;;) {
    // To the CTE's body (past a column list `name (a, b) AS (`): the group that the word AS precedes.
    const open = scan.indexOf('(', at);
    if (open < 0) return undefined;
    const close = matching(scan, open);
    if (close < 0) return undefined;
    const before = scan.slice(at, open);
    at = close + 1;
    if (!/\bas(\s+(not\s+)?materialized)?\s*$/i.test(before)) continue; // a column list
    const rest = scan.slice(at).trimStart();
    ctes.push(text.slice(from, at).trim());
    if (!rest.startsWith(',')) return { ctes, main: text.slice(scan.length - rest.length) };
    at = scan.length - rest.length + 1;
    from = at;
  }
}

/** The index of the parenthesis closing the one at `open`, or -1. */
function matching(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return i;
  }
  return -1;
}
