/**
 * The docs as a reader meets them: every link between them lands on a file and a heading that exist (GitHub's
 * heading anchors), every alert's runbook_url names a section of docs/runbook.md, every `docs/<file>.md#anchor`
 * the code and manifests cite exists, the guides open with a table of contents, the README opens with the two
 * commands, and no doc tells the history of issues.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { RUNBOOK_URL, runbookSection } from '../support/runbook';

const root = path.resolve(__dirname, '..', '..');
const read = (rel: string): string => fs.readFileSync(path.join(root, rel), 'utf8');
const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  'devstack/README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchors: lower case, punctuation other than '-' and '_' dropped, spaces as '-'. */
export function anchorsOf(markdown: string): string[] {
  const anchors: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced || !/^#{1,6} /.test(line)) continue;
    anchors.push(
      line
        .replace(/^#+ /, '')
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    );
  }
  return anchors;
}

/** Markdown links outside code: [text](target), targets that are not URLs. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t));
}

/** Where a link from `fromFile` lands: null when it does, else what is missing. */
function brokenTarget(fromFile: string, target: string): string | null {
  const [file, anchor] = target.split('#') as [string, string | undefined];
  const rel =
    file === '' ? fromFile : path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), file));
  if (!fs.existsSync(path.join(root, rel))) return `${rel} does not exist`;
  if (anchor === undefined || !rel.endsWith('.md')) return null;
  return anchorsOf(read(rel)).includes(anchor) ? null : `${rel} has no heading #${anchor}`;
}

describe('links between the docs', () => {
  it.each(DOCS)('%s: every relative link lands on a file and heading that exist', (doc) => {
    const links = relativeLinks(read(doc));
    const broken = links.flatMap((t) => {
      const why = brokenTarget(doc, t);
      return why ? [`${t}: ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('can fail: a link to a heading that does not exist is reported', () => {
    const missing = ['docs/runbook.md', 'no-such-heading'].join('#'); // not a citation the next test reads
    expect(brokenTarget('README.md', missing)).toBe('docs/runbook.md has no heading #no-such-heading');
    expect(brokenTarget('docs/cli.md', 'nowhere.md')).toBe('docs/nowhere.md does not exist');
  });

  it('every docs/<file>.md#anchor the code, tests and manifests cite exists', () => {
    const files = execFileSync(
      'git',
      ['ls-files', 'src', 'test', 'tools', 'deploy', 'scripts', 'Dockerfile'],
      {
        cwd: root,
        encoding: 'utf8',
      },
    )
      .split('\n')
      .filter((f) => f !== '' && fs.existsSync(path.join(root, f)));
    const cited = files.flatMap((f) =>
      [...read(f).matchAll(/\bdocs\/([\w.-]+\.md)#([\w-]+)/g)].map((m) => ({
        f,
        target: `docs/${m[1]}#${m[2]}`,
      })),
    );
    expect(cited.length).toBeGreaterThan(10);
    const broken = cited.flatMap(({ f, target }) => {
      const why = brokenTarget('README.md', target);
      return why ? [`${f}: ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });
});

describe('the alert runbook', () => {
  it('has one absolute base, the project’s repository of package.json', () => {
    const pkg = JSON.parse(read('package.json')) as { homepage?: string; repository?: { url?: string } };
    expect(pkg.homepage).toMatch(/^https:\/\/[^/]+\/[^/]+\/[^/]+$/);
    expect(pkg.repository?.url).toBe(`git+${pkg.homepage}.git`);
    expect(RUNBOOK_URL).toBe(`${pkg.homepage}/blob/main/docs/runbook.md`);
  });

  it('links every alert of deploy/prometheus/alerts.yml to a section of docs/runbook.md, by an absolute URL', () => {
    const anchors = anchorsOf(read('docs/runbook.md'));
    const rules = (
      parse(read('deploy/prometheus/alerts.yml')) as {
        groups: { rules: { alert?: string; annotations?: { runbook_url?: string } }[] }[];
      }
    ).groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThan(0);
    for (const r of rules) {
      const anchor = runbookSection(r.annotations?.runbook_url);
      expect({ alert: r.alert, anchor: anchors.includes(anchor ?? '') }).toEqual({
        alert: r.alert,
        anchor: true,
      });
    }
  });

  it('names every alert in its table', () => {
    const runbook = read('docs/runbook.md');
    const alerts = [...read('deploy/prometheus/alerts.yml').matchAll(/- alert: (\w+)/g)].map((m) => m[1]!);
    expect(alerts.length).toBeGreaterThan(0);
    for (const a of alerts) expect({ a, named: runbook.includes(`| \`${a}\``) }).toEqual({ a, named: true });
  });
});

describe('the guides', () => {
  it.each(['docs/operations.md', 'docs/runbook.md', 'docs/cli.md', 'docs/metrics.md', 'docs/access.md'])(
    '%s opens with a table of contents that reaches every section',
    (doc) => {
      const text = read(doc);
      const start = text.indexOf('\n## Contents\n');
      expect(start).toBeGreaterThan(0);
      const end = text.indexOf('\n## ', start + 1);
      const contents = text.slice(start, end);
      const sections = anchorsOf(
        text
          .slice(end)
          .split('\n')
          .filter((l) => l.startsWith('## '))
          .join('\n'),
      );
      expect(sections.length).toBeGreaterThan(1);
      const missing = sections.filter((a) => !contents.includes(`(#${a})`));
      expect(missing).toEqual([]);
    },
  );

  it('the README opens with the two commands a newcomer runs', () => {
    const opening = read('README.md').split('\n').slice(0, 6).join('\n');
    expect(opening).toMatch(
      /^# poimen-relay\n\n```sh\nnpm ci && npm run demo {2,}#[^\n]+\nnpm test {2,}#[^\n]+\n```/,
    );
  });

  it.each(DOCS)('%s refers to no issue number', (doc) => {
    const refs = read(doc)
      .split('\n')
      .filter((l) => /\bissues? #?\d+|\(#\d+\)|issue-\d+/i.test(l));
    expect(refs).toEqual([]);
  });
});
