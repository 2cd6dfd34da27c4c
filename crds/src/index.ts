export * from './schemas.ts';
export * from './status.ts';
export * from './validate.ts';
export * from './keys.ts';
