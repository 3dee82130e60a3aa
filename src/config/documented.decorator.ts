/** The sections of the configuration reference, in its order. */
export const TOPICS = ['Server', 'Database', 'Authentication', 'Limits', 'Logs and metrics', 'Webhooks'] as const;
export type Topic = (typeof TOPICS)[number];

/** A variable as the configuration reference (docs/configuration.md) describes it. */
export interface VariableDoc {
  readonly topic: Topic;
  /** What it does, in Markdown. */
  readonly about: string;
  /**
   * The default in words, for a variable with no default value (one that depends on other variables,
   * or a feature that is off). A fixed default is the property's initial value, shown as it is.
   */
  readonly byDefault?: string;
}

const DOCS = new WeakMap<object, Map<string, VariableDoc>>();

/**
 * Describes a variable of the environment's schema. The configuration reference is generated from
 * these (`npm run docs:config`), and a test holds the committed one to them.
 */
export function Documented(topic: Topic, about: string, byDefault?: string): PropertyDecorator {
  return (target, key) => {
    const docs = DOCS.get(target) ?? new Map<string, VariableDoc>();
    docs.set(String(key), { topic, about, byDefault });
    DOCS.set(target, docs);
  };
}

/** The description `@Documented` gave the variable `name` of `schema`, if any. */
export function variableDoc(schema: abstract new () => object, name: string): VariableDoc | undefined {
  return DOCS.get(schema.prototype as object)?.get(name);
}
