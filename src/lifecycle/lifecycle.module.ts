import { Global, Module } from '@nestjs/common';
import { ShutdownSignal } from './shutdown-signal';

/** The service's own lifecycle: the shutdown signal every feature that must react to SIGTERM reads. */
@Global()
@Module({ providers: [ShutdownSignal], exports: [ShutdownSignal] })
export class LifecycleModule {}
