import { ArgumentMetadata, Type, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { ClassTransformOptions, TransformationType, TransformFnParams } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage';
import { getMetadataStorage, ValidationArguments, ValidationError, ValidationTypes } from 'class-validator';
import { ValidationUtils } from 'class-validator/cjs/validation/ValidationUtils';
import { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

/**
 * A DTO's rules as one function: the instance the pipe hands on and, when it is invalid, its
 * violations; or undefined when a rule answered with a promise, which only the stock pipe awaits.
 */
export type CompiledValidation = (
  plain: Record<string, unknown>,
) => { instance: object; violations?: Violation[] } | undefined;

/** One property's first violation: the key class-validator files its message under, and the message. */
export interface Violation {
  property: string;
  value: unknown;
  constraint: string;
  message: string;
}

/**
 * The options whose effect the compiled path reproduces (beside them, only options that shape the
 * exception, which the pipe's own `exceptionFactory` builds from the same `ValidationError`s). With any
 * other option, or another value of these, every value takes the stock path.
 */
const COMPILED_OPTIONS: Partial<Record<keyof ValidationPipeOptions, (value: unknown) => boolean>> = {
  whitelist: (value) => value === true,
  forbidNonWhitelisted: (value) => !value,
  transform: (value) => value === true,
  stopAtFirstError: (value) => value === true,
  transformOptions: (value) =>
    value === undefined ||
    Object.entries(value as object).every(([key, option]) => key === 'enableImplicitConversion' && !option),
  forbidUnknownValues: () => true,
  validationError: () => true,
  exceptionFactory: () => true,
  errorHttpStatusCode: () => true,
  disableErrorMessages: () => true,
  maxErrorMessagesLength: () => true,
  validateCustomDecorators: () => true,
  enableDebugMessages: () => true,
};

/**
 * Nest's `ValidationPipe`, with a DTO's class-validator rules (and its class-transformer `@Transform`s)
 * compiled into one function the first time the DTO is seen, so a flat JSON body or a query pays for
 * its checks and nothing else: class-transformer, class-validator and the stock pipe's generic steps
 * are most of a 400's CPU (README.md here). Same constructor, same options, same answers: the
 * compiled function reads the metadata the DTO's decorators registered, calls the same constraint
 * functions, builds the same messages and hands the same `ValidationError`s to the same
 * `exceptionFactory`. Anything beyond what it knows (options other than whitelisting, stopping at
 * the first error and no implicit conversion; nested DTOs, `each`, groups, async rules,
 * `@Type`/`@Expose`/`@Exclude`; a value that is not a flat object) goes to the stock pipe.
 * compiled-validation.pipe.spec.ts holds it to the stock pipe on generated corpora.
 */
export class CompiledValidationPipe extends ValidationPipe {
  private readonly compiles: boolean;
  private readonly compiled = new Map<Type<unknown>, CompiledValidation | undefined>();
  private readonly keepTarget: boolean;
  private readonly keepValue: boolean;

  constructor(options: ValidationPipeOptions = {}) {
    super(options);
    this.compiles =
      options.whitelist === true &&
      options.transform === true &&
      options.stopAtFirstError === true &&
      Object.entries(options).every(
        ([key, value]) => value === undefined || COMPILED_OPTIONS[key as keyof ValidationPipeOptions]?.(value) === true,
      );
    this.keepTarget = options.validationError?.target === true;
    this.keepValue = options.validationError?.value !== false;
  }

  /** Nest's contract for this class: a promise, always, as the stock pipe's. */
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    return this.transformNow(value, metadata);
  }

  /**
   * `transform`, answered at once when the stock pipe would not validate the value, or when the
   * compiled path takes it (the instance, or the exception thrown); otherwise the stock pipe's
   * promise. For a pipe that hands the answer on as it is (`RequestValidationPipe`): a valid body or
   * query costs no promise of its own (docs/nest-router-proposal.md has the router's).
   */
  transformNow(value: unknown, metadata: ArgumentMetadata): unknown {
    // What the stock pipe hands on without validating (no type, a primitive, a custom decorator's
    // value) is its first step: taken here, without its promise.
    const target = this.expectedType ? { ...metadata, metatype: this.expectedType } : metadata;
    const { metatype } = target;
    if (!metatype || !this.toValidate(target)) {
      return this.isTransformEnabled ? this.transformPrimitive(value, target) : value;
    }
    const compiled = this.compiles && isFlatObject(value) ? this.compiledFor(metatype) : undefined;
    const result = compiled?.(value as Record<string, unknown>);
    if (result === undefined) return super.transform(value, metadata);
    if (result.violations !== undefined) {
      const errors = result.violations.map(({ property, value: invalid, constraint, message }) => {
        const error = new ValidationError();
        if (this.keepTarget) error.target = result.instance;
        error.property = property;
        if (this.keepValue) error.value = invalid;
        error.constraints = { [constraint]: message };
        error.children = [];
        return error;
      });
      // The stock pipe awaits the factory, which may be async; a synchronous one is not made to wait.
      const exception: unknown = this.exceptionFactory(errors);
      if (isThenable(exception)) {
        return Promise.resolve(exception).then((awaited) => {
          throw awaited;
        });
      }
      throw exception;
    }
    return result.instance;
  }

  /** The compiled rules of a type the stock pipe validates (`toValidate`), made the first time it is seen. */
  private compiledFor(metatype: Type<unknown>): CompiledValidation | undefined {
    if (!this.compiled.has(metatype)) this.compiled.set(metatype, compileValidation(metatype));
    return this.compiled.get(metatype);
  }
}

/**
 * A plain object whose values are all primitives, with no prototype keys: a JSON body, or a query
 * as Fastify's router parses it (fast-querystring makes it with `new Empty()`, whose prototype is
 * an empty object without a prototype; taken for a foreign object, every query string would go through
 * class-transformer and class-validator, a deep page's whole extra cost). A repeated query
 * parameter is a list, so it takes the stock path.
 */
function isFlatObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null && !isBareEmpty(prototype)) return false;
  for (const key of Object.keys(value)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return false;
    const field = (value as Record<string, unknown>)[key];
    if (typeof field === 'object' && field !== null) return false;
  }
  return true;
}

/** An object with no keys of its own and no prototype: nothing to inherit from it. */
function isBareEmpty(prototype: unknown): boolean {
  return (
    typeof prototype === 'object' &&
    prototype !== null &&
    Object.getPrototypeOf(prototype) === null &&
    Reflect.ownKeys(prototype).length === 0
  );
}

interface Check {
  /** The key of the message in `ValidationError.constraints`, as class-validator names it. */
  constraint: string;
  validate: (value: unknown, args: ValidationArguments) => boolean | Promise<boolean>;
  message: (args: ValidationArguments) => string;
  metadata: ValidationMetadata;
}

interface PropertyPlan {
  name: string;
  transforms: ((params: TransformFnParams) => unknown)[];
  conditions: ValidationMetadata[];
  /** `@IsDefined` first, then the other rules in class-validator's order (bottom decorator first). */
  checks: Check[];
}

const TRANSFORM_OPTIONS: ClassTransformOptions = { enableImplicitConversion: false };
// Per rule: the messages kept, built from templates without `$value` (see `message` below).
const MAX_BUILT_MESSAGES = 16;

/**
 * Compiles a DTO's class-validator rules (and its class-transformer `@Transform`s) into one
 * function, so a request pays for its checks and nothing else. The DTO stays the only
 * definition: this reads the metadata its decorators registered, calls the same constraint
 * functions and builds the same messages, for the pipe's options (whitelist, no implicit
 * conversion, stop at a property's first error). Anything beyond the plain subset (nested DTOs,
 * `each`, groups, async rules, `@Type`/`@Expose`/`@Exclude`…) returns `undefined`, and the pipe
 * then uses class-transformer and class-validator as they are. A test holds both to the same
 * answers for many inputs.
 */
export function compileValidation(metatype: Type<unknown>): CompiledValidation | undefined {
  const storage = getMetadataStorage();
  const rules = storage.getTargetValidationMetadatas(metatype, '', false, false);
  if (rules.length === 0) return undefined;
  if (defaultMetadataStorage.getExposedMetadatas(metatype).length > 0) return undefined;
  if (defaultMetadataStorage.getExcludedMetadatas(metatype).length > 0) return undefined;

  const plans: PropertyPlan[] = [];
  for (const [name, propertyRules] of Object.entries(storage.groupByPropertyName(rules))) {
    if (Object.getOwnPropertyDescriptor(metatype.prototype, name) !== undefined) return undefined;
    if (defaultMetadataStorage.findTypeMetadata(metatype, name) !== undefined) return undefined;
    const transforms = defaultMetadataStorage.findTransformMetadatas(metatype, name, TransformationType.PLAIN_TO_CLASS);
    if (
      transforms.some(
        ({ options }) =>
          (options?.groups?.length ?? 0) > 0 || options?.since !== undefined || options?.until !== undefined,
      )
    ) {
      return undefined;
    }
    const plan: PropertyPlan = {
      name,
      transforms: transforms.map((transform) => transform.transformFn),
      conditions: [],
      checks: [],
    };
    const defined: Check[] = [];
    for (const rule of propertyRules) {
      if (rule.each || rule.context !== undefined || (rule.groups?.length ?? 0) > 0) return undefined;
      if (rule.type === ValidationTypes.CONDITIONAL_VALIDATION) {
        plan.conditions.push(rule);
        continue;
      }
      if (rule.type !== ValidationTypes.IS_DEFINED && rule.type !== ValidationTypes.CUSTOM_VALIDATION) return undefined;
      for (const constraint of storage.getTargetValidatorConstraints(rule.constraintCls)) {
        if (constraint.async) return undefined;
        const instance = constraint.instance;
        // A message template without `$value` gives the same message every time for this rule and
        // property (its other tokens are the rule's constraints, the property and the class), so it
        // is built once. Bounded, in case a constraint makes a new template per value.
        const built = new Map<string, string>();
        const check: Check = {
          constraint: constraint.name || rule.type,
          metadata: rule,
          validate: (value, args) => instance.validate(value, args),
          message: (args) => {
            const template = rule.message || (instance.defaultMessage ? instance.defaultMessage(args) : '');
            if (typeof template !== 'string' || template.includes('$value')) {
              return ValidationUtils.replaceMessageSpecialTokens(template, args);
            }
            let message = built.get(template);
            if (message === undefined) {
              message = ValidationUtils.replaceMessageSpecialTokens(template, args);
              if (built.size < MAX_BUILT_MESSAGES) built.set(template, message);
            }
            return message;
          },
        };
        (rule.type === ValidationTypes.IS_DEFINED ? defined : plan.checks).push(check);
      }
    }
    plan.checks = [...defined, ...plan.checks];
    plans.push(plan);
  }

  const known = new Set(plans.map(({ name }) => name));
  return (plain) => {
    const instance = new metatype() as Record<string, unknown>;
    // The stock whitelist strips what the constructor set on a property without rules; so does this.
    for (const key of Object.keys(instance)) if (!known.has(key)) delete instance[key];
    for (const { name, transforms } of plans) {
      if (!Object.hasOwn(plain, name)) continue;
      let value = plain[name];
      for (const transform of transforms) {
        value = transform({
          value,
          key: name,
          obj: plain,
          type: TransformationType.PLAIN_TO_CLASS,
          options: TRANSFORM_OPTIONS,
        });
      }
      instance[name] = value;
    }
    let violations: Violation[] | undefined;
    for (const { name, conditions, checks } of plans) {
      const value = instance[name];
      if (!conditions.every((rule) => (rule.constraints[0] as (o: object, v: unknown) => boolean)(instance, value))) {
        continue;
      }
      for (const { constraint, metadata, validate, message } of checks) {
        if (metadata.validateIf && !metadata.validateIf(instance, value)) continue;
        const args: ValidationArguments = {
          targetName: metatype.name,
          property: name,
          object: instance,
          value,
          constraints: metadata.constraints,
        };
        const passed = validate(value, args);
        // A constraint not declared async may still answer with a promise: the stock pipe awaits it.
        if (isThenable(passed)) return undefined;
        if (!passed) {
          (violations ??= []).push({ property: name, value, constraint, message: message(args) });
          break;
        }
      }
    }
    return violations ? { instance, violations } : { instance };
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}
