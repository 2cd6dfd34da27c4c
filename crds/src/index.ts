export * from './schemas.ts';
export * from './validate.ts';
export * from './keys.ts';
