// The key format lives with the API contract in @tollgate/crds (the operator issues keys too).
export { generateKey, hashKey, isWellFormedKey, maskKey } from '@tollgate/crds';
