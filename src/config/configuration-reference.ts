import { getMetadataStorage } from 'class-validator';
import { TOPICS, variableDoc } from './documented.decorator';
import { EnvironmentVariables } from './environment-variables';

/** The lines of docs/configuration.md between which the reference is generated; the rest is written by hand. */
export const REFERENCE_START = '<!-- generated from src/config/environment-variables.ts by npm run docs:config -->';
export const REFERENCE_END = '<!-- end of the generated reference -->';

type Schema = new () => object;

/**
 * The configuration reference in Markdown: a table per topic, each variable of `schema` with what it
 * does, the values it accepts as its rules say, and its default. Throws, naming the variable, when one
 * has no `@Documented`, or has both a default value and a default in words, or neither.
 */
export function configurationReference(schema: Schema = EnvironmentVariables): string {
  // A variable's default is its initial value: a string or a number.
  const defaults = new schema() as Record<string, string | number | undefined>;
  const rows = variableNames(schema).map((name) => {
    const doc = variableDoc(schema, name);
    if (doc === undefined) throw new Error(`${name} has no @Documented description`);
    const value = defaults[name];
    if ((value === undefined) === (doc.byDefault === undefined)) {
      throw new Error(`${name} must have either a default value or a default in words (@Documented), not both`);
    }
    const about = [doc.about, accepted(schema, name)].filter(Boolean).join(' ');
    const byDefault = value === undefined ? doc.byDefault : `\`${String(value)}\``;
    return { topic: doc.topic, line: `| \`${name}\` | ${cell(about)} | ${cell(byDefault ?? '')} |` };
  });
  const sections = TOPICS.filter((topic) => rows.some((row) => row.topic === topic)).map((topic) =>
    [
      `### ${topic}`,
      '',
      '| variable | what it does | default |',
      '|---|---|---|',
      ...rows.filter((row) => row.topic === topic).map((row) => row.line),
    ].join('\n'),
  );
  return `${sections.join('\n\n')}\n`;
}

/** `document` with its generated part replaced by the reference of `schema`. */
export function withReference(document: string, schema: Schema = EnvironmentVariables): string {
  const start = document.indexOf(REFERENCE_START);
  const end = document.indexOf(REFERENCE_END);
  if (start === -1 || end < start) {
    throw new Error(`The document has no "${REFERENCE_START}" line followed by "${REFERENCE_END}"`);
  }
  const before = document.slice(0, start + REFERENCE_START.length);
  return `${before}\n\n${configurationReference(schema)}\n${document.slice(end)}`;
}

/** Every variable `schema` validates (each has at least `@IsOptional`), in the order declared. */
export function variableNames(schema: Schema): string[] {
  const rules = getMetadataStorage().getTargetValidationMetadatas(schema, '', true, false);
  return [...new Set(rules.map((rule) => rule.propertyName))];
}

/** The values the rules of `name` accept, when they are a list or a range: "One of …", "An integer, a–b." */
function accepted(schema: Schema, name: string): string | undefined {
  const rules = getMetadataStorage()
    .getTargetValidationMetadatas(schema, '', true, false)
    .filter((rule) => rule.propertyName === name);
  const constraint = (kind: string): unknown => rules.find((rule) => rule.name === kind)?.constraints[0];
  const values = constraint('isIn') as readonly string[] | undefined;
  if (values !== undefined) return `One of ${values.map((value) => `\`${value}\``).join(', ')}.`;
  const [min, max] = [constraint('min') as number | undefined, constraint('max') as number | undefined];
  if (min !== undefined && max !== undefined) return `An integer, ${min}–${max}.`;
  return undefined;
}

/** Text that stays in its table cell. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}
