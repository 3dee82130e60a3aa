import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

/** The environment the service reads, with the rules each variable must meet. */
export class EnvironmentVariables {
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'PORT must be an integer between 0 and 65535' })
  @Min(0, { message: 'PORT must be an integer between 0 and 65535' })
  @Max(65535, { message: 'PORT must be an integer between 0 and 65535' })
  PORT?: number;

  @IsOptional()
  @IsNotEmpty({ message: 'HOST must not be empty' })
  HOST?: string;

  @IsOptional()
  @Matches(/^(postgres|postgresql):\/\/.+|^sqlite:.+/, {
    message: 'DATABASE_URL must be postgres://…, postgresql://… or sqlite:<path>',
  })
  DATABASE_URL?: string;

  @IsOptional()
  @IsString()
  AUTH_TOKENS?: string;

  @IsOptional()
  @IsIn(['production', 'development', 'test'], {
    message: 'NODE_ENV must be production, development or test',
  })
  NODE_ENV?: string;

  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'BODY_LIMIT must be a whole number of bytes between 1024 and 104857600' })
  @Min(1024, { message: 'BODY_LIMIT must be a whole number of bytes between 1024 and 104857600' })
  @Max(104857600, { message: 'BODY_LIMIT must be a whole number of bytes between 1024 and 104857600' })
  BODY_LIMIT?: number;

  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'DATABASE_POOL_MAX must be an integer between 1 and 1000' })
  @Min(1, { message: 'DATABASE_POOL_MAX must be an integer between 1 and 1000' })
  @Max(1000, { message: 'DATABASE_POOL_MAX must be an integer between 1 and 1000' })
  DATABASE_POOL_MAX?: number;

  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'DATABASE_CONNECT_ATTEMPTS must be an integer between 1 and 100' })
  @Min(1, { message: 'DATABASE_CONNECT_ATTEMPTS must be an integer between 1 and 100' })
  @Max(100, { message: 'DATABASE_CONNECT_ATTEMPTS must be an integer between 1 and 100' })
  DATABASE_CONNECT_ATTEMPTS?: number;

  @IsOptional()
  @IsNotEmpty({ message: 'DATA_DIR must not be empty' })
  DATA_DIR?: string;
}
