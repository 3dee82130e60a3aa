import { ApiParam } from '@nestjs/swagger';
import { INT64_SCHEMA } from './int64-schema';

/**
 * Documents a path parameter read by `ParseInt64Pipe`: an int64, with what a JavaScript client must
 * know. `subject` says whose id it is ("The id of the plant").
 */
export const ApiInt64Param = (name: string, subject: string): MethodDecorator =>
  ApiParam({
    name,
    description:
      `${subject}: a decimal int64 (digits, optional leading minus). Anything else is a 400. ` +
      'JavaScript clients: ids beyond 2^53 need a big-integer-aware JSON parser.',
    schema: { ...INT64_SCHEMA },
    example: 10,
  });
