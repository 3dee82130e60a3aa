import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorDto } from './error.dto';

/** Documents each failure status of a route with the shared `Error` body. */
export function ApiErrorResponses(descriptions: Record<number, string>): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...Object.entries(descriptions).map(([status, description]) =>
      ApiResponse({ status: Number(status), description, type: ErrorDto }),
    ),
  );
}
