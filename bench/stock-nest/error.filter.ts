import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

/** Every failure as the Error body `{"error": <status>, "message": …}` (the docs' catch-everything filter). */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const status = exception instanceof HttpException ? exception.getStatus() : HttpStatus.INTERNAL_SERVER_ERROR;
    const body = exception instanceof HttpException ? exception.getResponse() : 'Internal server error';
    // ValidationPipe's 400 carries one message a violated rule.
    const message = typeof body === 'string' ? body : (body as { message: string | string[] }).message;
    const response: unknown = host.switchToHttp().getResponse();
    this.adapterHost.httpAdapter.reply(
      response,
      { error: status, message: Array.isArray(message) ? message.join('; ') : message },
      status,
    );
  }
}
