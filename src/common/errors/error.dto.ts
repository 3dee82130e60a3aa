import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** The longest `message` (`AllExceptionsFilter` cuts a longer one). */
export const MAX_ERROR_MESSAGE_LENGTH = 2000;

/** The body of every response that is not 2xx. */
@ApiSchema({ name: 'Error' })
export class ErrorDto {
  /**
   * The HTTP status code of the response.
   * @example 400
   */
  @ApiProperty({ type: 'integer', format: 'int32', minimum: 400, maximum: 599 })
  error!: number;

  /**
   * What went wrong, for people: for validation, every violated field.
   * @example "id must be an integer in the int64 range; name is required"
   */
  @ApiProperty({ maxLength: MAX_ERROR_MESSAGE_LENGTH })
  message!: string;
}
