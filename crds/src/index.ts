export * from './schemas.ts';
export * from './validate.ts';
