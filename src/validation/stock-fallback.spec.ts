import { ArgumentMetadata, BadRequestException } from '@nestjs/common';
import { NewPlantDto } from '../plants/dto/new-plant.dto';
import { RequestValidationPipe } from './request-validation.pipe';

// As an upgrade of class-transformer or class-validator that moved a private module the compiled pipe
// reads would make it: the module cannot load.
jest.mock('./compiled-validation.pipe', () => {
  throw new Error("Cannot find module 'class-validator/cjs/validation/ValidationUtils'");
});

describe('RequestValidationPipe with VALIDATION_PIPE=stock', () => {
  const BODY: ArgumentMetadata = { type: 'body', metatype: NewPlantDto, data: '' };

  it('should never load the compiled pipe, so it answers even when that module cannot load', async () => {
    expect(() => new RequestValidationPipe('compiled')).toThrow('Cannot find module');
    const pipe = new RequestValidationPipe('stock');
    await expect(pipe.transform({ id: 7, name: 'Monstera', extra: 1 }, BODY)).resolves.toEqual(
      Object.assign(new NewPlantDto(), { id: 7n, name: 'Monstera' }),
    );
    await expect(pipe.transform({ id: '7', name: 5 }, BODY)).rejects.toThrow(
      new BadRequestException('id must be an integer in the int64 range; name must be a string'),
    );
    expect(() => pipe.transform(undefined, BODY)).toThrow('Request body is required: send a JSON object');
  });
});
