export * from './reflector.ts';
export * from './kube-client.ts';
