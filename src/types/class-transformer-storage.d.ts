// class-transformer keeps its decorator metadata in this module; its types are published, the path is not.
declare module 'class-transformer/cjs/storage' {
  import { MetadataStorage } from 'class-transformer/types/MetadataStorage';

  export const defaultMetadataStorage: MetadataStorage;
}
