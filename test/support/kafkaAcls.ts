/**
 * The least-privilege Kafka ACLs as docs/access.md lists them ("The ACLs, role by role"), read from the
 * document so the suite grants exactly what operators are told to grant, no more: a row the relay does not
 * need, or one it needs and the table lacks, shows up as a test failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  type AclEntry,
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  ResourcePatternTypes,
} from 'kafkajs';
import { REPO_ROOT } from './cli';

export interface AclRow {
  role: string;
  resource: 'topic' | 'group' | 'cluster';
  pattern: 'literal' | 'prefixed';
  name: string;
  operations: string[];
}

const OPERATIONS: Record<string, AclOperationTypes> = {
  Read: AclOperationTypes.READ,
  Write: AclOperationTypes.WRITE,
  Create: AclOperationTypes.CREATE,
  Delete: AclOperationTypes.DELETE,
  Alter: AclOperationTypes.ALTER,
  Describe: AclOperationTypes.DESCRIBE,
  DescribeConfigs: AclOperationTypes.DESCRIBE_CONFIGS,
  AlterConfigs: AclOperationTypes.ALTER_CONFIGS,
};

const code = (cell: string) => /^`([^`]+)`$/.exec(cell.trim())?.[1];

/** The rows of the table whose header starts `| role | resource | pattern | name | operations |`. */
export function documentedAcls(doc = path.join(REPO_ROOT, 'docs', 'access.md')): AclRow[] {
  const lines = fs.readFileSync(doc, 'utf8').split('\n');
  const header = lines.findIndex((l) =>
    /^\|\s*role\s*\|\s*resource\s*\|\s*pattern\s*\|\s*name\s*\|\s*operations\s*\|/.test(l),
  );
  if (header < 0)
    throw new Error(
      'docs/access.md has no Kafka ACL table (| role | resource | pattern | name | operations |)',
    );
  const rows: AclRow[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [role, resource, pattern, name, operations] = line
      .split('|')
      .slice(1)
      .map((c) => c.trim());
    const ops = (operations ?? '').split(',').map((o) => o.trim());
    const unknown = ops.filter((o) => !(o in OPERATIONS));
    if (
      !role ||
      !name ||
      unknown.length > 0 ||
      !['topic', 'group', 'cluster'].includes(resource!) ||
      !['literal', 'prefixed'].includes(pattern!)
    ) {
      throw new Error(`unreadable ACL row: ${line}`);
    }
    rows.push({
      role,
      resource: resource as AclRow['resource'],
      pattern: pattern as AclRow['pattern'],
      name: code(name) ?? name,
      operations: ops,
    });
  }
  return rows;
}

/** The ACL entries of `rows` for `principal`, placeholders (`<tenant>`, `<KAFKA_GROUP_ID>`) filled in. */
export function aclEntries(rows: AclRow[], principal: string, values: Record<string, string>): AclEntry[] {
  const fill = (name: string) =>
    name.replace(/<([A-Za-z_]+)>/g, (m, key: string) => {
      const v = values[key];
      if (v === undefined) throw new Error(`no value for ${m} in ACL name ${name}`);
      return v;
    });
  return rows.flatMap((r) =>
    r.operations.map((op) => ({
      resourceType: {
        topic: AclResourceTypes.TOPIC,
        group: AclResourceTypes.GROUP,
        cluster: AclResourceTypes.CLUSTER,
      }[r.resource],
      resourceName: r.resource === 'cluster' ? 'kafka-cluster' : fill(r.name),
      resourcePatternType:
        r.pattern === 'literal' ? ResourcePatternTypes.LITERAL : ResourcePatternTypes.PREFIXED,
      principal,
      host: '*',
      operation: OPERATIONS[op]!,
      permissionType: AclPermissionTypes.ALLOW,
    })),
  );
}
