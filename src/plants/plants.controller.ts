import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Post, Query, Res } from '@nestjs/common';
import { ApiExtraModels, ApiNoContentResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import {
  ApiErrorResponses,
  IDENTITY_PROVIDER_UNAVAILABLE,
  PROTECTED_OPERATION_ERRORS,
  READ_UNAVAILABLE,
} from '../common/errors/api-error-responses.decorator';
import { StorageUnavailableMessages, WhenStorageUnavailable } from '../common/errors/storage-unavailable.decorator';
import { ApiInt64Param } from '../common/int64/api-int64-param.decorator';
import { ParseInt64Pipe } from '../common/int64/parse-int64.pipe';
import { CreateOnceOperation } from '../common/resources/create-once-operation.decorator';
import { byIdErrors, GetByIdOperation } from '../common/resources/get-by-id-operation.decorator';
import { ApiPageResponse } from '../common/paging/api-page-response.decorator';
import { nextPageLink } from '../common/paging/page';
import { PageQueryDto } from '../common/paging/page-query.dto';
import { NewPlantDto } from './dto/new-plant.dto';
import { PlantDto, toPlantDto } from './dto/plant.dto';
import { Plant } from './plant';
import { PlantsService } from './plants.service';

const DELETE_UNAVAILABLE: StorageUnavailableMessages = {
  timeout:
    'The database did not answer in time; the plant may or may not be deleted: send the same request again (404 then means it was)',
  unavailable: 'The database is unavailable; the plant was not deleted, retry shortly',
};

@ApiTags('plants')
@ApiExtraModels(NewPlantDto)
@Controller('plants')
export class PlantsController {
  constructor(private readonly plants: PlantsService) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @CreateOnceOperation('plant', PlantDto, {
    differs: 'a different name or tag',
    invalidExample: 'id must be an integer in the int64 range; name is required',
  })
  async create(@Body() newPlant: NewPlantDto): Promise<PlantDto> {
    return toPlantDto(await this.plants.create(newPlant));
  }

  /**
   * Lists plants in id order (negative ids first), a page at a time.
   *
   * When more plants follow, the `Link` header holds the next page's URL (`rel="next"`); follow it
   * until it is absent to walk the whole store. Every page costs the same however deep it is.
   */
  @Get()
  @ApiOperation({ operationId: 'listPlants', summary: 'List plants' })
  @ApiPageResponse(NewPlantDto, '/plants', 'At most `limit` plants with an id greater than `after`, ordered by id.')
  @ApiErrorResponses({
    ...PROTECTED_OPERATION_ERRORS,
    400: ['A query parameter is not valid.', 'limit must be a decimal integer from 1 to 1000'],
    503: READ_UNAVAILABLE,
  })
  async list(@Query() query: PageQueryDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<Plant[]> {
    const page = await this.plants.list(query);
    if (page.next !== undefined)
      void reply.header('link', nextPageLink('/plants', { limit: query.limit, after: page.next }));
    return page.items;
  }

  @Get(':id')
  @GetByIdOperation('plant', NewPlantDto)
  get(@Param('id', ParseInt64Pipe) id: bigint): Promise<Plant> {
    return this.plants.get(id);
  }

  /**
   * Deletes one plant. Creating its id again afterwards is a new plant, not a replay. Endpoints
   * subscribed to `plant.deleted` are sent the plant as it was stored (the `plantDeleted` webhook).
   */
  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @ApiOperation({ operationId: 'deletePlant', summary: 'Delete a plant' })
  @ApiInt64Param('id', 'The id of the plant')
  @ApiNoContentResponse({ description: 'The plant existed and is now deleted.' })
  @ApiErrorResponses({
    ...byIdErrors('plant'),
    413: 'A body was sent (none is needed, and one is ignored) and it is larger than BODY_LIMIT.',
    415: 'A body was sent (none is needed, and one is ignored) and it is not application/json.',
    503: [
      'The database is unreachable (nothing was deleted) or did not answer within DATABASE_QUERY_TIMEOUT_MS ' +
        '(it may have been deleted). Send the same request again: a 404 then means it was. ' +
        IDENTITY_PROVIDER_UNAVAILABLE,
      DELETE_UNAVAILABLE.unavailable,
    ],
  })
  @WhenStorageUnavailable(DELETE_UNAVAILABLE)
  async delete(@Param('id', ParseInt64Pipe) id: bigint): Promise<void> {
    await this.plants.delete(id);
  }
}
