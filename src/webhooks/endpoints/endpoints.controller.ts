import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { AdminOnly } from '../../auth/admin-only.decorator';
import {
  ApiErrorResponses,
  IDENTITY_PROVIDER_UNAVAILABLE,
  PROTECTED_OPERATION_ERRORS,
  READ_UNAVAILABLE,
} from '../../common/errors/api-error-responses.decorator';
import { nextPageLink, pageOf } from '../../common/paging/page';
import { PAGE_LINK_SCHEMA, pageSchema } from '../../common/paging/api-page-response.decorator';
import { StorageUnavailableMessages, WhenStorageUnavailable } from '../../common/errors/storage-unavailable.decorator';
import {
  DeliveryDto,
  DeliveryWithAttemptsDto,
  ListDeliveriesQueryDto,
  RecoverDto,
  RecoverResultDto,
  toDeliveryDto,
  toDeliveryWithAttemptsDto,
} from './dto/delivery.dto';
import {
  EndpointChangesDto,
  EndpointDto,
  EndpointWithSecretDto,
  ListEndpointsQueryDto,
  NewEndpointDto,
  SecretDto,
  SecretRotationDto,
  toEndpointDto,
} from './dto/endpoint.dto';
import { parseRfc3339 } from './dto/rfc3339';
import { EndpointsService } from './endpoints.service';

/** What every route here can answer: the failures of any protected operation, the admin permission, the database. */
const COMMON = {
  ...PROTECTED_OPERATION_ERRORS,
  403: 'A valid credential without the admin permission (ADMIN_TOKENS, or a JWT with scope webhooks:manage).',
  503: `The database is unreachable or did not answer in time; retry shortly. ${IDENTITY_PROVIDER_UNAVAILABLE}`,
};
/** The same, for the routes that only read. */
const COMMON_READ = { ...COMMON, 503: READ_UNAVAILABLE };
const NO_ENDPOINT = ['No endpoint has this id.', 'No webhook endpoint with id ep_019ab3c4d5e6'] as [string, string];
const CONFIG_OWNED = 'The endpoint is declared in WEBHOOK_URLS (source "config"): change the configuration instead.';
const CONFIG_SECRET = [
  'The endpoint is declared in WEBHOOK_URLS (source "config"): its secret is the operator\'s WEBHOOK_SECRET, never served or rotated here. ' +
    "Or its stored secret cannot be used: its key is not in WEBHOOK_SECRETS_KEY, or (served only) the row was altered or copied from another endpoint's, which a rotation replaces.",
  "Endpoint ep_019ab3c4d5e6 is declared in WEBHOOK_URLS: its secret is the operator's WEBHOOK_SECRET and is not served",
] as [string, string];
/** A recover runs in batches, each committed: one that fails part way has queued some. */
const RECOVER_UNAVAILABLE: StorageUnavailableMessages = {
  timeout:
    'The database did not answer in time; some failed deliveries may be pending again already: recover again to queue the rest (a repeated recover is safe)',
  unavailable:
    'The database is unavailable; some failed deliveries may be pending again already: recover again shortly to queue the rest (a repeated recover is safe)',
};
const BODY_ERRORS = {
  413: 'The body is larger than BODY_LIMIT.',
  415: 'The body is not application/json.',
};

/**
^ * Webhook subscribers (endpoints and the event types they subscribe to), their secrets and their delivery logs. Every route needs the
 * admin permission.
 */
@ApiTags('webhooks')
@AdminOnly()
// The items of its pages (declared by reference).
@ApiExtraModels(EndpointDto, DeliveryDto)
@Controller('webhooks/endpoints')
export class EndpointsController {
  constructor(private readonly endpoints: EndpointsService) {}

  /** Adds a subscriber. Its secret is in the answer (and later at `GET …/secret`). */
  @Post()
  @ApiOperation({ operationId: 'createWebhookEndpoint', summary: 'Add a webhook endpoint' })
  @ApiCreatedResponse({
    type: EndpointWithSecretDto,
    description: 'The endpoint, with its signing secret.',
    headers: {
      Location: {
        description: "The endpoint's URL.",
        schema: {
          type: 'string',
          format: 'uri-reference',
          maxLength: 100,
          pattern: '^/webhooks/endpoints/ep_[0-9a-f]+$',
        },
      },
    },
  })
  @ApiErrorResponses({
    ...COMMON,
    ...BODY_ERRORS,
    400: [
      'A field is not valid, the url points to a blocked address (a private or special-purpose one, or one in WEBHOOK_BLOCKED_NETWORKS, unless WEBHOOK_ALLOWED_NETWORKS opens it), or it is plain http in production (only https, or http to an IP address inside WEBHOOK_ALLOWED_NETWORKS).',
      'url must be an absolute http(s) URL',
    ],
    409: [
      'An endpoint with this url exists already, or there are WEBHOOK_MAX_ENDPOINTS (100 by default) API endpoints already, disabled ones included.',
      'An endpoint with this url exists already',
    ],
  })
  async create(
    @Body() body: NewEndpointDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<EndpointWithSecretDto> {
    const { secret, ...endpoint } = await this.endpoints.create(body);
    void reply.header('location', `/webhooks/endpoints/${endpoint.id}`);
    return { ...toEndpointDto(endpoint), secret };
  }

  /** Lists endpoints, oldest first, a page at a time (`Link: rel="next"` while more follow). Never a secret. */
  @Get()
  @ApiOperation({ operationId: 'listWebhookEndpoints', summary: 'List webhook endpoints' })
  @ApiOkResponse({
    schema: pageSchema(EndpointDto),
    description: 'At most `limit` endpoints created after `after`.',
    headers: { Link: { description: 'Present only when more follow (RFC 8288).', schema: PAGE_LINK_SCHEMA } },
  })
  @ApiErrorResponses({
    ...COMMON_READ,
    400: ['A query parameter is not valid.', 'limit must be a decimal integer from 1 to 1000'],
  })
  async list(
    @Query() query: ListEndpointsQueryDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<EndpointDto[]> {
    const page = pageOf(
      await this.endpoints.list(query.limit + 1, query.after),
      query.limit,
      (endpoint) => endpoint.id,
    );
    if (page.next !== undefined) {
      void reply.header('link', nextPageLink('/webhooks/endpoints', { limit: query.limit, after: page.next }));
    }
    return page.items.map(toEndpointDto);
  }

  /** Reads one endpoint (never its secret). */
  @Get(':id')
  @ApiOperation({ operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint' })
  @ApiEndpointId()
  @ApiOkResponse({ type: EndpointDto, description: 'The endpoint.' })
  @ApiErrorResponses({ ...COMMON_READ, 404: NO_ENDPOINT })
  async get(@Param('id') id: string): Promise<EndpointDto> {
    return toEndpointDto(await this.endpoints.get(id));
  }

  /**
   * Changes an endpoint. `disabled: false` re-enables it; a new url applies to deliveries still pending.
   * A `config` endpoint takes `disabled` only (it stays so across restarts while WEBHOOK_URLS lists it).
   */
  @Patch(':id')
  @ApiOperation({ operationId: 'updateWebhookEndpoint', summary: 'Change a webhook endpoint' })
  @ApiEndpointId()
  @ApiOkResponse({ type: EndpointDto, description: 'The endpoint as changed.' })
  @ApiErrorResponses({
    ...COMMON,
    ...BODY_ERRORS,
    400: [
      'A field is not valid, the url points to a blocked address (a private or special-purpose one, or one in WEBHOOK_BLOCKED_NETWORKS, unless WEBHOOK_ALLOWED_NETWORKS opens it), or it is plain http in production (only https, or http to an IP address inside WEBHOOK_ALLOWED_NETWORKS).',
      'disabled must be true or false',
    ],
    404: NO_ENDPOINT,
    409: [
      'A url, description or eventTypes for an endpoint declared in WEBHOOK_URLS (only disabled changes there), or another endpoint has this url.',
      CONFIG_OWNED,
    ],
  })
  async update(@Param('id') id: string, @Body() body: EndpointChangesDto): Promise<EndpointDto> {
    return toEndpointDto(await this.endpoints.update(id, body));
  }

  /** Deletes an endpoint; its pending deliveries are never sent. */
  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @ApiOperation({ operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint' })
  @ApiEndpointId()
  @ApiNoContentResponse({ description: 'Deleted, with its deliveries.' })
  @ApiErrorResponses({ ...COMMON, 404: NO_ENDPOINT, 409: [CONFIG_OWNED, CONFIG_OWNED] })
  async delete(@Param('id') id: string): Promise<void> {
    await this.endpoints.delete(id);
  }

  /** The endpoint's current signing secret; a `config` endpoint's (WEBHOOK_SECRET) is never served. */
  @Get(':id/secret')
  @ApiOperation({ operationId: 'getWebhookEndpointSecret', summary: "Get an endpoint's signing secret" })
  @ApiEndpointId()
  @ApiOkResponse({ type: SecretDto, description: 'The current secret.' })
  @ApiErrorResponses({ ...COMMON_READ, 404: NO_ENDPOINT, 409: CONFIG_SECRET })
  async secret(@Param('id') id: string): Promise<SecretDto> {
    return { secret: await this.endpoints.secret(id) };
  }

  /**
   * Rotates the secret: for WEBHOOK_SECRET_OVERLAP (24 h by default) the previous one signs too, then
   * only the new one. The body is optional: without one (or with `{}`) the new secret is generated.
   */
  @Post(':id/secret/rotate')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ operationId: 'rotateWebhookEndpointSecret', summary: "Rotate an endpoint's signing secret" })
  @ApiEndpointId()
  @ApiBody({ type: SecretRotationDto, required: false })
  @ApiOkResponse({ type: SecretDto, description: 'The new secret.' })
  @ApiErrorResponses({
    ...COMMON,
    ...BODY_ERRORS,
    400: [
      'The given secret is not whsec_ and the base64 of 24 to 64 bytes.',
      'secret must be whsec_ followed by the base64 of 24 to 64 bytes',
    ],
    404: NO_ENDPOINT,
    409: CONFIG_SECRET,
  })
  async rotate(@Param('id') id: string, @Body() body: SecretRotationDto): Promise<SecretDto> {
    return { secret: await this.endpoints.rotate(id, body.secret) };
  }

  /** The endpoint's deliveries, newest first, a page at a time (`Link: rel="next"` while more follow). */
  @Get(':id/deliveries')
  @ApiOperation({ operationId: 'listWebhookDeliveries', summary: "List an endpoint's deliveries" })
  @ApiEndpointId()
  @ApiOkResponse({
    schema: pageSchema(DeliveryDto),
    description: 'At most `limit` deliveries, newest first.',
    headers: { Link: { description: 'Present only when more follow (RFC 8288).', schema: PAGE_LINK_SCHEMA } },
  })
  @ApiErrorResponses({
    ...COMMON_READ,
    400: ['A query parameter is not valid.', 'status must be pending, succeeded or failed'],
    404: NO_ENDPOINT,
  })
  async deliveries(
    @Param('id') id: string,
    @Query() query: ListDeliveriesQueryDto,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DeliveryDto[]> {
    const fetched = await this.endpoints.deliveriesOf(id, { ...query, limit: query.limit + 1 });
    const page = pageOf(fetched, query.limit, (delivery) => delivery.seq);
    if (page.next !== undefined) {
      const status: Record<string, string> = query.status === undefined ? {} : { status: query.status };
      void reply.header(
        'link',
        nextPageLink(`/webhooks/endpoints/${id}/deliveries`, { limit: query.limit, ...status, after: page.next }),
      );
    }
    return page.items.map(toDeliveryDto);
  }

  /** One delivery, with every attempt made so far, oldest first. */
  @Get(':id/deliveries/:deliveryId')
  @ApiOperation({ operationId: 'getWebhookDelivery', summary: 'Get a delivery with its attempts' })
  @ApiEndpointId()
  @ApiDeliveryId()
  @ApiOkResponse({ type: DeliveryWithAttemptsDto, description: 'The delivery and every attempt, oldest first.' })
  @ApiErrorResponses({
    ...COMMON_READ,
    404: ['No such endpoint, or no such delivery for it.', 'No delivery msg_… for webhook endpoint ep_…'],
  })
  async delivery(@Param('id') id: string, @Param('deliveryId') deliveryId: string): Promise<DeliveryWithAttemptsDto> {
    return toDeliveryWithAttemptsDto(await this.endpoints.delivery(id, deliveryId));
  }

  /** Sends a delivery again now, with the same webhook-id (once, whichever instance claims it). */
  @Post(':id/deliveries/:deliveryId/resend')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({ operationId: 'resendWebhookDelivery', summary: 'Resend a delivery' })
  @ApiEndpointId()
  @ApiDeliveryId()
  @ApiAcceptedResponse({ type: DeliveryDto, description: 'The delivery, pending with its next attempt now.' })
  @ApiErrorResponses({
    ...COMMON,
    404: ['No such endpoint, or no such delivery for it.', 'No delivery msg_… for webhook endpoint ep_…'],
  })
  async resend(@Param('id') id: string, @Param('deliveryId') deliveryId: string): Promise<DeliveryDto> {
    return toDeliveryDto(await this.endpoints.resend(id, deliveryId));
  }

  /**
   * Sends one `webhook.test` event (`{"type": "webhook.test", "timestamp", "data": {"endpointId"}}`) to
   * this endpoint alone, whatever its `eventTypes`, to check its receiver before the first real event.
   * It goes through the outbox like any event: signed with the endpoint's secrets, in its delivery log,
   * retried on the schedule, resendable; and it counts toward the endpoint's health (a 410 disables it,
   * failures slow its deliveries down).
   */
  @Post(':id/test')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({ operationId: 'testWebhookEndpoint', summary: 'Send a test event to an endpoint' })
  @ApiEndpointId()
  @ApiAcceptedResponse({ type: DeliveryDto, description: 'The delivery of the `webhook.test` event, pending.' })
  @ApiErrorResponses({
    ...COMMON,
    404: NO_ENDPOINT,
    409: [
      'The endpoint is disabled, and a disabled endpoint receives nothing: enable it first (PATCH with `{"disabled": false}`).',
      'Webhook endpoint ep_019ab3c4d5e6 is disabled and receives nothing: enable it first (PATCH /webhooks/endpoints/ep_019ab3c4d5e6 with {"disabled": false}), then send the test',
    ],
  })
  async test(@Param('id') id: string): Promise<DeliveryDto> {
    return toDeliveryDto(await this.endpoints.sendTest(id));
  }

  /**
   * Queues again every failed delivery of the endpoint created in [since, until), each with its whole
   * retry schedule ahead of it (its earlier attempts stay in its attempt log). Done in batches of 500,
   * each committed on its own, and answered when the last is: a repeated recover is safe, and queues
   * only what an earlier one, cut short, left.
   */
  @Post(':id/recover')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({ operationId: 'recoverWebhookEndpoint', summary: 'Recover failed deliveries since a time' })
  @ApiEndpointId()
  @ApiAcceptedResponse({
    type: RecoverResultDto,
    description: 'How many failed deliveries are pending again, due now, each with a fresh retry schedule.',
  })
  @ApiErrorResponses({
    ...COMMON,
    ...BODY_ERRORS,
    400: ['since or until is not an RFC 3339 date-time.', 'since must be an RFC 3339 date-time'],
    404: NO_ENDPOINT,
    503: [
      'The database is unreachable or did not answer in time, or the service began shutting down part way: the ' +
        'batches done so far stay queued, and a recover again queues the rest. ' +
        IDENTITY_PROVIDER_UNAVAILABLE,
      RECOVER_UNAVAILABLE.unavailable,
    ],
  })
  @WhenStorageUnavailable(RECOVER_UNAVAILABLE)
  async recover(@Param('id') id: string, @Body() body: RecoverDto): Promise<RecoverResultDto> {
    // Both validated as RFC 3339 already.
    const until = body.until === undefined ? undefined : parseRfc3339(body.until);
    return { queued: await this.endpoints.recover(id, parseRfc3339(body.since)!, until) };
  }
}

function ApiEndpointId(): MethodDecorator {
  return ApiParam({ name: 'id', description: 'The endpoint id (`ep_…`).', schema: { type: 'string' } });
}

function ApiDeliveryId(): MethodDecorator {
  return ApiParam({
    name: 'deliveryId',
    description: 'The delivery id: its `webhook-id` (`msg_…`).',
    schema: { type: 'string' },
  });
}
