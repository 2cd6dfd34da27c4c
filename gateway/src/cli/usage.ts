// Help texts, kept together so the top-level usage and each command's help stay consistent.

const FILE_NOTE = 'The manifest file (--file) defaults to $TOLLGATE_CONFIG, else ./data/tollgate.yaml.';

export const MAIN_USAGE = `tollgate: manage the resources of a Tollgate gateway

Usage:
  tollgate keys create --account NAME [--name KEY] [--expires-at TIME] [--prefix P] [--file F] [-o yaml]
  tollgate keys revoke NAME [--file F]
  tollgate keys list [--file F]
  tollgate validate [FILE]
  tollgate crds [-o DIR]
  tollgate usage [--url URL] [-o json]
  tollgate help [COMMAND]

${FILE_NOTE}
Run "tollgate COMMAND --help" for the details of one command.
`;

export const KEYS_USAGE = `Usage:
  tollgate keys create --account NAME [--name KEY] [--expires-at TIME] [--prefix P] [--file F] [-o yaml]
  tollgate keys revoke NAME [--file F]
  tollgate keys list [--file F]

${FILE_NOTE}
`;

export const KEYS_CREATE_USAGE = `Usage: tollgate keys create --account NAME [options]

Creates an API key for an account. The full key is printed once, on stdout; only its SHA-256 hash is
stored, in an ApiKey manifest appended to the manifest file (comments and layout are kept).

Options:
  --account NAME     the Account the key belongs to (must exist in the file, unless -o yaml)
  --name KEY         the ApiKey's name (DNS-1123); default: the account plus a random suffix
  --expires-at TIME  ISO 8601 date-time with a time zone, e.g. 2026-12-31T23:59:59Z
  --prefix P         key prefix (default: $TOLLGATE_KEY_PREFIX, else tg); keys look like P_sk_...
  --file F           the manifest file to append to
  -o, --output yaml  write nothing: print the ApiKey manifest on stdout and the key on stderr, e.g.
                     tollgate keys create --account acme -o yaml | kubectl apply -f -
  -h, --help         show this help

${FILE_NOTE}
`;

export const KEYS_REVOKE_USAGE = `Usage: tollgate keys revoke NAME [--file F]

Sets spec.revoked: true on the ApiKey NAME. A running gateway refuses the key (401) as soon as it has
reloaded the file, within seconds.

Options:
  --file F     the manifest file to edit
  -h, --help   show this help

${FILE_NOTE}
`;

export const KEYS_LIST_USAGE = `Usage: tollgate keys list [--file F]

Lists the ApiKeys in the manifest file: name, account, status (active, revoked, expired, or no account)
and expiry. Hashes are shortened; keys themselves are never stored anywhere.

Options:
  --file F     the manifest file to read
  -h, --help   show this help

${FILE_NOTE}
`;

export const VALIDATE_USAGE = `Usage: tollgate validate [FILE]

Checks a file of manifests exactly as the gateway would before applying it. Prints every problem
(document, line, kind and name, field) and exits 1 when the file would be refused; prints a one-line
summary and exits 0 when it is valid. Dangling references (a key whose account is missing, ...) are
reported as warnings: the gateway accepts them too.

Options:
  -h, --help   show this help

${FILE_NOTE}
`;

export const CRDS_USAGE = `Usage: tollgate crds [-o DIR]

Prints the CustomResourceDefinitions of the five tollgate.dev kinds, generated from the same schemas
the gateway validates with, e.g. "tollgate crds | kubectl apply -f -". With -o DIR, writes one file
per CRD into DIR instead.

Options:
  -o, --output DIR   directory to write the CRD files into
  -h, --help         show this help
`;

export const USAGE_REPORT_USAGE = `Usage: tollgate usage [--url URL] [-o json]

Prints this month's usage from a running gateway (GET /usage on its metrics port): requests, tokens
and spend (in the gateway's currency, TOLLGATE_CURRENCY) per account, per API key and per model. In
shared mode (Redis) any replica answers for the whole cluster; otherwise each replica for itself.

Options:
  --url URL          the gateway's metrics address (default: $TOLLGATE_METRICS_URL, else
                     http://127.0.0.1:$TOLLGATE_METRICS_PORT, port 9464)
  -o, --output json  print the answer as JSON instead of tables
  -h, --help         show this help
`;
