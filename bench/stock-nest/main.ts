// The stock peer of bench/run.js (bench/README.md): Plant Store's measured operations as an ordinary
// Nest team would write them, from the docs and sample/10-fastify; public Nest APIs only.
import { Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { BearerAuthGuard } from './bearer-auth.guard';
import { ErrorFilter } from './error.filter';
import { LAYERED, adapterOptions, addLayers, loggerModule } from './layers';
import { PlantsController } from './plants.controller';
import { plantsRepositoryProvider } from './plants.repository';

@Module({
  imports: LAYERED ? [loggerModule] : [],
  controllers: [PlantsController],
  providers: [
    plantsRepositoryProvider,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
    { provide: APP_FILTER, useClass: ErrorFilter },
  ],
})
class AppModule {}

async function bootstrap() {
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule,
    new FastifyAdapter(adapterOptions),
    LAYERED ? { bufferLogs: true } : { logger: ['error', 'warn'] },
  );
  if (LAYERED) await addLayers(app);
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, transform: true }));
  const config = new DocumentBuilder().setTitle('Plant Store (stock Nest peer)').addBearerAuth().build();
  SwaggerModule.setup('docs', app, SwaggerModule.createDocument(app, config));
  await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
  console.log(`Listening on ${await app.getUrl()}`);
}
void bootstrap();
