// Standalone mode: the console's writes go into the manifest file, atomically (temporary file and
// rename), one at a time, with the operator's comments and layout kept; the file source reloads it.
import type { Account, ApiKey } from '@tollgate/crds';
import { parseAllDocuments } from 'yaml';
import { readFile } from 'node:fs/promises';
import { appendDocuments, editSpec, writeAtomically } from '../resources/manifest-file.ts';
import { ConflictError, paymentAnnotations, type ConsoleWriter, type MonthTotals, type PaymentChange, type PaymentOutcome } from './writer.ts';

export class FileConsoleWriter implements ConsoleWriter {
  readonly mode = 'file' as const;
  readonly #file: string;
  readonly #afterWrite: () => Promise<void>;
  /** Writes run one after another: each reads the file the previous one wrote. */
  #queue: Promise<unknown> = Promise.resolve();

  /** `afterWrite` reloads the source, so that the next page shows the change at once. */
  constructor(file: string, afterWrite: () => Promise<void>) {
    this.#file = file;
    this.#afterWrite = afterWrite;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => {});
    return run.then(async (value) => {
      await this.#afterWrite();
      return value;
    });
  }

  async #documents() {
    const documents = parseAllDocuments(await readFile(this.#file, 'utf8'));
    return Array.isArray(documents) ? documents : [];
  }

  async #exists(kind: string, name: string): Promise<boolean> {
    return (await this.#documents()).some((d) => d.get('kind') === kind && d.getIn(['metadata', 'name']) === name);
  }

  createKey(key: ApiKey): Promise<void> {
    return this.#serial(async () => {
      if (await this.#exists('ApiKey', key.metadata.name)) throw new ConflictError(`an ApiKey named ${key.metadata.name} exists`);
      await appendDocuments(this.#file, [{ ...key, metadata: { ...key.metadata, creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } }]);
    });
  }

  revokeKey(name: string): Promise<void> {
    return this.#serial(async () => {
      await editSpec(this.#file, 'ApiKey', name, (spec) => {
        spec.revoked = true;
      });
    });
  }

  createAccount(account: Account): Promise<void> {
    return this.#serial(async () => {
      if (await this.#exists('Account', account.metadata.name)) throw new ConflictError(`an Account named ${account.metadata.name} exists`);
      await appendDocuments(this.#file, [account]);
    });
  }

  applyPayment(name: string, eventId: string, change: PaymentChange): Promise<PaymentOutcome> {
    return this.#serial(async () => {
      const documents = await this.#documents();
      const target = documents.find((d) => d.get('kind') === 'Account' && d.getIn(['metadata', 'name']) === name);
      if (!target) return 'missing';
      const current = (target.getIn(['metadata', 'annotations']) as { toJSON(): Record<string, string> } | undefined)?.toJSON();
      const annotations = paymentAnnotations(current, eventId, change);
      if (annotations === 'duplicate') return 'duplicate';
      for (const [key, value] of Object.entries(annotations)) target.setIn(['metadata', 'annotations', key], value);
      if (change.plan === null) target.deleteIn(['spec', 'plan']);
      else target.setIn(['spec', 'plan'], change.plan);
      await writeAtomically(this.#file, documents.map((d) => d.toString({ lineWidth: 0 })).join(''));
      return 'applied';
    });
  }

  async clusterUsage(): Promise<MonthTotals | null> {
    return null;
  }
}
