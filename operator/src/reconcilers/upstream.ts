// Upstream: are its credentials there (ResolvedRefs), did the last probe of GET {baseURL}/models get
// an answer (Reachable) and accept the credentials (CredentialsValid)? Probe figures (latency, the
// model ids offered) go into status. Before this process has probed, the previous status stands, so a
// new leader does not flip a healthy Upstream to Unknown.
import { condition, findCondition, readyFrom, type ConditionInput } from '../conditions.ts';
import { keyOf, type Obj } from '../informers.ts';
import type { Evaluation, ReconcileContext } from './types.ts';

const isTranslated = (provider: unknown) => provider === 'anthropic' || provider === 'gemini' || provider === 'vertex' || provider === 'bedrock';

export function evaluateUpstream(upstream: Obj, context: ReconcileContext): Evaluation {
  const name = upstream.metadata.name;
  const spec = upstream.spec ?? {};
  const refs: string[] = [];
  let resolved: ConditionInput;
  const secretRef = spec.credentials?.secretRef as { name: string; key: string } | undefined;
  // Bedrock's access keys may come from Secrets too: each must be there.
  const awsRefs = (['accessKeyId', 'secretAccessKey', 'sessionToken'] as const).flatMap((field) => {
    const ref = spec.bedrock?.[field]?.secretRef as { name: string; key: string } | undefined;
    return ref ? [{ field, ref }] : [];
  });
  const missingAws = awsRefs.find(({ ref }) => !context.informers.secret(ref.name)?.data?.[ref.key]);
  for (const { ref } of awsRefs) refs.push(keyOf('Secret', ref.name));
  if (missingAws) {
    resolved = condition('ResolvedRefs', 'False', 'SecretNotFound', `spec.bedrock.${missingAws.field}.secretRef names Secret "${missingAws.ref.name}" key "${missingAws.ref.key}", which does not exist; create it: kubectl create secret generic ${missingAws.ref.name} --from-literal=${missingAws.ref.key}=<the AWS value>`);
  } else if (secretRef) {
    refs.push(keyOf('Secret', secretRef.name));
    const secret = context.informers.secret(secretRef.name);
    if (!secret) resolved = condition('ResolvedRefs', 'False', 'SecretNotFound', `Secret "${secretRef.name}" named in spec.credentials.secretRef does not exist; create it: kubectl create secret generic ${secretRef.name} --from-literal=${secretRef.key}=<the provider's API key>`);
    else if (secret.data && !secret.data[secretRef.key]) resolved = condition('ResolvedRefs', 'False', 'SecretKeyNotFound', `Secret "${secretRef.name}" has no key "${secretRef.key}" (spec.credentials.secretRef.key); add it or point secretRef.key at the key that holds the API key`);
    else resolved = condition('ResolvedRefs', 'True', 'Resolved', `credentials from Secret ${secretRef.name}, key ${secretRef.key}`);
  } else if (spec.credentials?.env) {
    resolved = condition('ResolvedRefs', 'True', 'FromEnvironment', `credentials from the gateway's environment variable ${spec.credentials.env}`);
  } else if (spec.provider === 'bedrock') {
    resolved = condition('ResolvedRefs', 'True', awsRefs.length ? 'Resolved' : 'CredentialChain', awsRefs.length ? 'AWS access keys from Secrets' : "AWS credentials from the gateway's standard credential chain (environment, web identity, container or instance metadata)");
  } else if (spec.provider === 'vertex') {
    resolved = condition('ResolvedRefs', 'True', 'ApplicationDefaultCredentials', "Google credentials from Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or the metadata server: GKE Workload Identity, Cloud Run, GCE)");
  } else {
    resolved = condition('ResolvedRefs', 'True', 'NoCredentials', 'no credentials configured; requests go upstream without an Authorization header');
  }

  const probe = context.probe(name);
  const previous = upstream.status ?? {};
  let reachable: ConditionInput;
  let credentials: ConditionInput;
  let fields: Record<string, unknown>;
  const url = probe?.target ?? previous.probeTarget ?? (isTranslated(spec.provider) ? `the ${spec.provider} probe` : `GET ${String(spec.baseURL ?? '').replace(/\/$/, '')}/models`);
  if (!probe) {
    const keep = (type: string, fallback: ConditionInput): ConditionInput => {
      const old = findCondition(previous, type);
      return old ? condition(type, old.status as ConditionInput['status'], old.reason, old.message) : fallback;
    };
    reachable = keep('Reachable', condition('Reachable', 'Unknown', 'Probing', `the first probe (${url}) has not answered yet`));
    credentials = keep('CredentialsValid', condition('CredentialsValid', 'Unknown', 'Probing', `the first probe (${url}) has not answered yet`));
    // What the last probe found stays until the next one answers, what it called included.
    fields = { reachable: previous.reachable, latencyMs: previous.latencyMs, models: previous.models, lastProbeTime: previous.lastProbeTime, probeTarget: previous.probeTarget };
  } else {
    fields = { reachable: probe.reachable, latencyMs: probe.latencyMs, models: probe.models ?? previous.models, lastProbeTime: probe.at };
    if (probe.target) fields.probeTarget = probe.target;
    if (!probe.reachable) {
      reachable = condition('Reachable', 'False', 'Unreachable', `${url} failed: ${probe.error} (${probe.failures} probe(s) in a row); the gateway answers 503 for models that only this upstream serves. Check spec.baseURL and that the provider is up`);
      credentials = condition('CredentialsValid', 'Unknown', 'Unreachable', 'cannot check the credentials while the upstream does not answer');
    } else if (probe.httpStatus === 401 || probe.httpStatus === 403 || probe.credentialRefused) {
      reachable = condition('Reachable', 'True', 'Answered', `${url} answered HTTP ${probe.httpStatus} in ${probe.latencyMs} ms`);
      const where = secretRef
        ? `the key in Secret ${secretRef.name} (key ${secretRef.key})`
        : spec.credentials?.env
          ? `the key in ${spec.credentials.env}`
          : spec.provider === 'vertex'
            ? "the token from Application Default Credentials"
            : 'the request without credentials';
      const remedy = !secretRef && !spec.credentials?.env && spec.provider === 'vertex' ? "grant the Google service account it runs as (Workload Identity) roles/aiplatform.user" : 'put a valid API key there';
      credentials = probe.error
        ? condition('CredentialsValid', 'False', 'CredentialsUnavailable', `the credential for ${url} could not be had: ${probe.error}`)
        : condition('CredentialsValid', 'False', 'CredentialsRefused', `${url} answered HTTP ${probe.httpStatus}: the provider refused ${where}; ${remedy}`);
    } else if (probe.httpStatus >= 500) {
      reachable = condition('Reachable', 'False', 'ServerError', `${url} answered HTTP ${probe.httpStatus} (${probe.failures} probe(s) in a row); the provider is failing`);
      credentials = condition('CredentialsValid', 'Unknown', 'ServerError', `cannot check the credentials while ${url} answers HTTP ${probe.httpStatus}`);
    } else {
      reachable = condition('Reachable', 'True', 'Answered', `${url} answered HTTP ${probe.httpStatus} in ${probe.latencyMs} ms`);
      credentials = probe.httpStatus < 300
        ? condition('CredentialsValid', 'True', 'Accepted', `${url} accepted the credentials${offered(probe.models)}`)
        : condition('CredentialsValid', 'Unknown', 'UnexpectedAnswer', `${url} answered HTTP ${probe.httpStatus}; the credentials could not be checked`);
    }
  }
  const own = [resolved, reachable, credentials];
  const ready = readyFrom(own, { ResolvedRefs: 'True', Reachable: 'True', CredentialsValid: 'True' }, `reachable, credentials accepted${offered(fields.models as string[] | undefined)}`);
  return { fields, conditions: [ready, ...own], refs };
}

/** The count of models offered, when the probe is a model list; nothing when it is not (Vertex's countTokens, Bedrock's ListAsyncInvokes), rather than a false 0. */
function offered(models: string[] | undefined): string {
  return models ? ` (${models.length} models offered)` : '';
}
