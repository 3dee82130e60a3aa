// Modules of class-transformer and class-validator that CompiledValidationPipe uses: their types are
// published, their paths are not. Both libraries are pinned exactly; compiled-validation.pipe.spec.ts
// is what says an upgrade still gives the same answers.
declare module 'class-transformer/cjs/storage' {
  import { MetadataStorage } from 'class-transformer/types/MetadataStorage';

  /** Where class-transformer's decorators (`@Transform`, `@Type`, …) keep their metadata. */
  export const defaultMetadataStorage: MetadataStorage;
}

declare module 'class-validator/cjs/validation/ValidationUtils' {
  /** class-validator's own message building: `$constraintN`, `$value`, `$property`, `$target`. */
  export { ValidationUtils } from 'class-validator/types/validation/ValidationUtils';
}
