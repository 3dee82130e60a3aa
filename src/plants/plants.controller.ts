import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Post, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { ParseInt64Pipe } from '../common/int64/parse-int64.pipe';
import { answerPage } from '../common/paging/page';
import { PageQueryDto } from '../common/paging/page-query.dto';
import { CreateOnceOperation } from '../common/resources/create-once-operation.decorator';
import { DeleteOperation } from '../common/resources/delete-operation.decorator';
import { GetByIdOperation } from '../common/resources/get-by-id-operation.decorator';
import { ListOperation } from '../common/resources/list-operation.decorator';
import { PlantDto, toPlantDto } from './dto/plant.dto';
import { NewPlantDto } from './dto/new-plant.dto';
import { Plant } from './plant';
import { PlantsService } from './plants.service';

// The operations document themselves from the name (their texts, every failure, a 400 example about
// the id, which stays true whatever fields you add): no JSDoc on the handlers, and keep each
// `@HttpCode` in sight, as the Swagger plugin reads both.
@ApiTags('plants')
@Controller('plants')
export class PlantsController {
  constructor(private readonly plants: PlantsService) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @CreateOnceOperation('plant', PlantDto, { differs: 'a different name or tag' })
  async create(@Body() newPlant: NewPlantDto): Promise<PlantDto> {
    return toPlantDto(await this.plants.create(newPlant));
  }

  // Listed and read, a plant has its id: the NewPlant schema.
  @Get()
  @ListOperation('/plants', NewPlantDto)
  async list(@Query() query: PageQueryDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<Plant[]> {
    return answerPage(reply, '/plants', query.limit, await this.plants.list(query));
  }

  @Get(':id')
  @GetByIdOperation('plant', NewPlantDto)
  get(@Param('id', ParseInt64Pipe) id: bigint): Promise<Plant> {
    return this.plants.get(id);
  }

  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @DeleteOperation('plant')
  delete(@Param('id', ParseInt64Pipe) id: bigint): Promise<void> {
    return this.plants.delete(id);
  }
}
