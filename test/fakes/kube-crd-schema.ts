// The schema of apiextensions.k8s.io/v1 CustomResourceDefinition as the fake Kubernetes API server
// publishes it (OpenAPI v3, so kubectl validates server-side and `kubectl explain crd` reads it) and
// admits with it (pruning, strict unknown fields, types, enums). It declares the fields of the
// upstream type a CRD author writes and the API server reports; the user's openAPIV3Schema inside is
// kept as written (x-kubernetes-preserve-unknown-fields), its rules are checked by kube-crds.ts.
import type { JsonSchema } from './kube-resources.ts';

const string = (description: string): JsonSchema => ({ type: 'string', description });
const strings = (description: string): JsonSchema => ({ type: 'array', description, items: { type: 'string' }, 'x-kubernetes-list-type': 'atomic' });
const preserved = (description: string): JsonSchema => ({ type: 'object', description, 'x-kubernetes-preserve-unknown-fields': true });

const NAMES: JsonSchema = {
  type: 'object',
  description: 'CustomResourceDefinitionNames indicates the names to serve this CustomResourceDefinition.',
  required: ['plural', 'kind'],
  properties: {
    plural: string('plural is the plural name of the resource to serve; it must be all lowercase and match the URL path /apis/<group>/<version>/.../<plural>.'),
    singular: string('singular is the singular name of the resource; it must be all lowercase. Defaults to the lowercased kind.'),
    shortNames: strings('shortNames are short names for the resource, exposed in API discovery documents, usable by clients such as kubectl get <shortname>.'),
    kind: string('kind is the serialized kind of the resource. It is normally CamelCase and singular.'),
    listKind: string('listKind is the serialized kind of the list for this resource. Defaults to "`kind`List".'),
    categories: strings('categories is a list of grouped resources this custom resource belongs to (e.g. "all"), used by clients such as kubectl get <category>.'),
  },
};

const PRINTER_COLUMN: JsonSchema = {
  type: 'object',
  description: 'CustomResourceColumnDefinition specifies a column for server side printing.',
  required: ['name', 'type', 'jsonPath'],
  properties: {
    name: string('name is a human readable name for the column.'),
    type: string('type is an OpenAPI type definition for this column: integer, number, string, boolean or date.'),
    format: string('format is an optional OpenAPI type definition for this column.'),
    description: string('description is a human readable description of this column.'),
    priority: { type: 'integer', format: 'int32', description: 'priority is an integer defining the relative importance of this column; 0 is shown in standard view, greater numbers in wide view.' },
    jsonPath: string('jsonPath is a simple JSON path (i.e. with array notation) which is evaluated against each custom resource to produce the value for this column.'),
  },
};

const VERSION: JsonSchema = {
  type: 'object',
  description: 'CustomResourceDefinitionVersion describes a version for CRD.',
  required: ['name', 'served', 'storage'],
  properties: {
    name: string('name is the version name, e.g. "v1", "v2beta1". Custom resources are served under this version at /apis/<group>/<version>/...'),
    served: { type: 'boolean', description: 'served is a flag enabling/disabling this version from being served via REST APIs.' },
    storage: { type: 'boolean', description: 'storage indicates this version should be used when persisting custom resources to storage. There must be exactly one version with storage=true.' },
    deprecated: { type: 'boolean', description: 'deprecated indicates this version of the custom resource API is deprecated.' },
    deprecationWarning: string('deprecationWarning overrides the default warning returned to API clients.'),
    schema: {
      type: 'object',
      description: 'schema describes the schema used for validation, pruning, and defaulting of this version of the custom resource.',
      properties: { openAPIV3Schema: preserved('openAPIV3Schema is the OpenAPI v3 schema to use for validation and pruning.') },
    },
    subresources: {
      type: 'object',
      description: 'subresources specify what subresources this version of the defined custom resource have.',
      properties: {
        status: preserved('status indicates the custom resource should serve a `/status` subresource.'),
        scale: preserved('scale indicates the custom resource should serve a `/scale` subresource.'),
      },
    },
    additionalPrinterColumns: { type: 'array', description: 'additionalPrinterColumns specifies additional columns returned in Table output.', items: PRINTER_COLUMN, 'x-kubernetes-list-type': 'atomic' },
    selectableFields: { type: 'array', description: 'selectableFields specifies paths to fields that may be used as field selectors.', items: { type: 'object', required: ['jsonPath'], properties: { jsonPath: string('jsonPath of a field selectable on this resource.') } }, 'x-kubernetes-list-type': 'atomic' },
  },
};

const CONDITION: JsonSchema = {
  type: 'object',
  description: 'CustomResourceDefinitionCondition contains details for the current condition of this pod.',
  required: ['type', 'status'],
  properties: {
    type: string('type is the type of the condition. Types include Established, NamesAccepted and Terminating.'),
    status: string('status is the status of the condition. Can be True, False, Unknown.'),
    lastTransitionTime: { type: 'string', format: 'date-time', description: 'lastTransitionTime last time the condition transitioned from one status to another.' },
    reason: string("reason is a unique, one-word, CamelCase reason for the condition's last transition."),
    message: string('message is a human-readable message indicating details about last transition.'),
  },
};

export const CRD_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'CustomResourceDefinition represents a resource that should be exposed on the API server. Its name MUST be in the format <.spec.name>.<.spec.group>.',
  required: ['spec'],
  properties: {
    spec: {
      type: 'object',
      description: 'spec describes how the user wants the resources to appear',
      required: ['group', 'names', 'scope', 'versions'],
      properties: {
        group: string('group is the API group of the defined custom resource. The custom resources are served under `/apis/<group>/...`. Must match the name of the CustomResourceDefinition (in the form `<names.plural>.<group>`).'),
        names: NAMES,
        scope: { type: 'string', description: 'scope indicates whether the defined custom resource is cluster- or namespace-scoped. Allowed values are `Cluster` and `Namespaced`.', enum: ['Cluster', 'Namespaced'] },
        versions: { type: 'array', description: 'versions is the list of all API versions of the defined custom resource.', items: VERSION, 'x-kubernetes-list-type': 'atomic' },
        conversion: preserved('conversion defines conversion settings for the CRD.'),
        preserveUnknownFields: { type: 'boolean', description: 'preserveUnknownFields indicates that object fields which are not specified in the OpenAPI schema should be preserved when persisting to storage.' },
      },
    },
    status: {
      type: 'object',
      description: 'status indicates the actual state of the CustomResourceDefinition',
      properties: {
        conditions: { type: 'array', description: 'conditions indicate state for particular aspects of a CustomResourceDefinition', items: CONDITION, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
        acceptedNames: NAMES,
        storedVersions: strings('storedVersions lists all versions of CustomResources that were ever persisted.'),
      },
    },
  },
};
