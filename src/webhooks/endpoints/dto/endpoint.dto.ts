import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsDefined, IsOptional, IsString, Matches, MaxLength, ValidateBy } from 'class-validator';
import { DEFAULT_PAGE_LIMIT, PageLimit } from '../../../common/paging/page-query.dto';
import { OptionalBody } from '../../../validation/optional-body.decorator';
import { MAX_URL_LENGTH } from '../../../config/webhook-config';
import { Endpoint } from '../endpoint';

const DESCRIPTION_NUL = 'description must not contain NUL (\\u0000)';

/** PostgreSQL's text cannot hold NUL: refused as the field's fault, never a 500 on the insert. */
function WithoutNul(message: string): PropertyDecorator {
  return ValidateBy(
    {
      name: 'withoutNul',
      validator: { validate: (value: unknown) => typeof value === 'string' && !value.includes('\0') },
    },
    { message },
  );
}
export const ENDPOINT_ID = /^ep_[0-9a-f]{1,64}$/;
/** An endpoint id's schema: what ENDPOINT_ID accepts. */
export const ENDPOINT_ID_SCHEMA = { pattern: ENDPOINT_ID.source, maxLength: 67 } as const;
/** A time as the service writes it (`Date.toISOString()`): RFC 3339, UTC, milliseconds. */
export const TIMESTAMP_SCHEMA = { format: 'date-time', maxLength: 24 } as const;
/** A signing secret: `whsec_` and the base64 of 24 to 64 bytes (`isSecret`). */
const SECRET_SCHEMA = { pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$', maxLength: 94 } as const;
const MAX_DESCRIPTION_LENGTH = 500;
/** The service's own words (`dispatch-policy.ts`), well under this. */
const MAX_DISABLED_REASON_LENGTH = 200;

/** The most event types one endpoint subscribes to, and the longest name of one. */
export const MAX_EVENT_TYPES = 20;
const MAX_EVENT_TYPE_LENGTH = 100;
const EVENT_TYPES_SHAPE = `eventTypes must be an array of 1 to ${MAX_EVENT_TYPES} event type names`;
const EVENT_TYPE_NAMES = `eventTypes must hold strings of 1 to ${MAX_EVENT_TYPE_LENGTH} characters, each once`;

/**
 * `eventTypes`: an array of 1 to MAX_EVENT_TYPES names, then names that are strings, each once. Which
 * names exist is the service's to say (the types the features publish): a 400 there too.
 */
function EventTypeList(): PropertyDecorator {
  const shape = ValidateBy(
    {
      name: 'eventTypeList',
      validator: {
        validate: (value: unknown) => Array.isArray(value) && value.length >= 1 && value.length <= MAX_EVENT_TYPES,
      },
    },
    { message: EVENT_TYPES_SHAPE },
  );
  const names = ValidateBy(
    {
      name: 'eventTypeNames',
      validator: {
        validate: (value: unknown) =>
          Array.isArray(value) &&
          value.every((name) => typeof name === 'string' && name.length > 0 && name.length <= MAX_EVENT_TYPE_LENGTH) &&
          new Set(value).size === value.length,
      },
    },
    { message: EVENT_TYPE_NAMES },
  );
  // Checked in this order, and the first that fails answers (stopAtFirstError): the shape, then the names.
  return (target, property) => {
    shape(target, property);
    names(target, property);
  };
}

/** How the document shows `eventTypes`. */
const EVENT_TYPES_PROPERTY = {
  type: 'array',
  items: { type: 'string', minLength: 1, maxLength: MAX_EVENT_TYPE_LENGTH, example: 'plant.created' },
  minItems: 1,
  maxItems: MAX_EVENT_TYPES,
  uniqueItems: true,
} as const;

/** A subscriber of webhooks: of the event types it subscribes to. */
@ApiSchema({ name: 'Endpoint' })
export class EndpointDto {
  /** Assigned by the service; ids sort in creation order. @example "ep_019ab3c4d5e600002f4e1a9b7c3d" */
  @ApiProperty(ENDPOINT_ID_SCHEMA)
  id!: string;
  /** Where deliveries are POSTed: absolute http(s), no credentials, no fragment, at most 2,048 characters. @example "https://receiver.example/hooks/plants" */
  @ApiProperty({ format: 'uri', maxLength: MAX_URL_LENGTH })
  url!: string;
  /** For people; at most 500 characters. @example "Inventory sync" */
  @ApiProperty({ maxLength: MAX_DESCRIPTION_LENGTH })
  description!: string;
  /** A disabled endpoint receives nothing; events committed meanwhile create no delivery for it. */
  disabled!: boolean;
  /** The event types it gets deliveries of (the `webhooks` of this document); no other reaches it but a `webhook.test` sent to it. */
  @ApiProperty(EVENT_TYPES_PROPERTY)
  eventTypes!: string[];
  /** Why the service disabled it (no success for WEBHOOK_DISABLE_AFTER while failing); present only then. */
  @ApiPropertyOptional({ maxLength: MAX_DISABLED_REASON_LENGTH })
  disabledReason?: string;
  /** `config`: declared by WEBHOOK_URLS, read-only here (409). */
  @ApiProperty({ enum: ['api', 'config'] })
  source!: 'api' | 'config';
  /** RFC 3339, UTC. @example "2026-11-23T10:00:00.000Z" */
  @ApiProperty(TIMESTAMP_SCHEMA)
  createdAt!: string;
  /** RFC 3339, UTC. @example "2026-11-23T10:00:00.000Z" */
  @ApiProperty(TIMESTAMP_SCHEMA)
  updatedAt!: string;
}

/** An endpoint just created, with its signing secret. */
@ApiSchema({ name: 'EndpointWithSecret' })
export class EndpointWithSecretDto extends EndpointDto {
  /** Verify deliveries with it (Standard Webhooks). @example "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" */
  @ApiProperty(SECRET_SCHEMA)
  secret!: string;
}

/** An endpoint's signing secret. */
@ApiSchema({ name: 'EndpointSecret' })
export class SecretDto {
  /** `whsec_` and base64. @example "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" */
  @ApiProperty(SECRET_SCHEMA)
  secret!: string;
}

export function toEndpointDto(endpoint: Endpoint): EndpointDto {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    disabled: endpoint.disabled,
    eventTypes: [...endpoint.eventTypes],
    ...(endpoint.disabledReason === undefined ? {} : { disabledReason: endpoint.disabledReason }),
    source: endpoint.source,
    createdAt: new Date(endpoint.createdAtMs).toISOString(),
    updatedAt: new Date(endpoint.updatedAtMs).toISOString(),
  };
}

/** The body of `POST /webhooks/endpoints`. Unknown properties are ignored. */
@ApiSchema({ name: 'NewEndpoint' })
export class NewEndpointDto {
  /** Absolute http(s), no credentials, no fragment, at most 2,048 characters; not a private or special-purpose address, nor one in WEBHOOK_BLOCKED_NETWORKS, unless WEBHOOK_ALLOWED_NETWORKS opens it. In production (NODE_ENV=production) https, or plain http to an IP address inside WEBHOOK_ALLOWED_NETWORKS. @example "https://receiver.example/hooks/plants" */
  @ApiProperty({ format: 'uri', maxLength: MAX_URL_LENGTH })
  @IsDefined({ message: 'url is required' })
  @IsString({ message: 'url must be a string' })
  url!: string;

  /** At most 500 characters, no NUL. @example "Inventory sync" */
  @IsOptional()
  @WithoutNul(DESCRIPTION_NUL)
  @MaxLength(MAX_DESCRIPTION_LENGTH, { message: 'description must be at most 500 characters' })
  @IsString({ message: 'description must be a string' })
  description?: string;

  /** Create it disabled. */
  @IsOptional()
  @IsBoolean({ message: 'disabled must be true or false' })
  disabled?: boolean;

  /** The event types it gets deliveries of, each one the service publishes (the `webhooks` of this document but `webhook.test`, which only `POST /webhooks/endpoints/{id}/test` sends); `["plant.created"]` when absent. */
  // The default is said in words only: a schema `default` makes client generators (openapi-typescript)
  // type the property as required in the request body.
  @ApiPropertyOptional(EVENT_TYPES_PROPERTY)
  @IsOptional()
  @EventTypeList()
  eventTypes?: string[];
}

/** The body of `PATCH /webhooks/endpoints/{id}`: what to change. A new url applies to deliveries still pending. */
@ApiSchema({ name: 'EndpointChanges' })
export class EndpointChangesDto {
  /** @example "https://receiver.example/hooks/plants-v2" */
  @ApiPropertyOptional({ format: 'uri', maxLength: MAX_URL_LENGTH })
  @IsOptional()
  @IsString({ message: 'url must be a string' })
  url?: string;

  /** At most 500 characters, no NUL. */
  @IsOptional()
  @WithoutNul(DESCRIPTION_NUL)
  @MaxLength(MAX_DESCRIPTION_LENGTH, { message: 'description must be at most 500 characters' })
  @IsString({ message: 'description must be a string' })
  description?: string;

  /** `false` re-enables it and clears `disabledReason`; the only change a `config` endpoint takes. */
  @IsOptional()
  @IsBoolean({ message: 'disabled must be true or false' })
  disabled?: boolean;

  /** The event types it gets deliveries of from now on (the whole list). Deliveries already written stay. */
  @ApiPropertyOptional(EVENT_TYPES_PROPERTY)
  @IsOptional()
  @EventTypeList()
  eventTypes?: string[];
}

/** The body of `POST /webhooks/endpoints/{id}/secret/rotate`, which may also come without one. */
@ApiSchema({ name: 'SecretRotation' })
@OptionalBody()
export class SecretRotationDto {
  /** The new secret (`whsec_` and the base64 of 24 to 64 bytes); generated when absent. */
  @ApiPropertyOptional(SECRET_SCHEMA)
  @IsOptional()
  @IsString({ message: 'secret must be a string' })
  secret?: string;
}

/** `limit` and `after` of a keyset page of endpoints. */
export class ListEndpointsQueryDto {
  @PageLimit()
  limit: number = DEFAULT_PAGE_LIMIT;

  /** The last endpoint id of the previous page (the `Link: rel="next"` header carries it). */
  @ApiProperty({ required: false, ...ENDPOINT_ID_SCHEMA })
  @IsOptional()
  @Matches(ENDPOINT_ID, { message: 'after must be an endpoint id (ep_…)' })
  @IsString({ message: 'after must be an endpoint id (ep_…)' })
  after?: string;
}
