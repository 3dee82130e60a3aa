import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(__dirname, '..');
// Folders that hold no documentation of ours: dependencies, build output, what tests and runs leave.
const SKIPPED = new Set(['node_modules', 'dist', 'coverage', 'data', 'test-output', '.git']);

/** Every Markdown file of the repository. */
function markdownFiles(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : markdownFiles(join(dir, entry.name));
    return entry.name.endsWith('.md') ? [join(dir, entry.name)] : [];
  });
}

/** The text outside code: fenced blocks and inline code spans may hold brackets that are no link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors GitHub gives a document's headings: lower case, punctuation dropped, spaces as hyphens. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const headings = markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm);
  return new Set(
    [...headings].map(([, heading]) => {
      const slug = heading
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-');
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      return count === 0 ? slug : `${slug}-${count}`;
    }),
  );
}

/** What is wrong with the link `target` written in `file`, or undefined when it resolves. */
function problem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
    return /^(https?|mailto):/i.test(target) ? undefined : 'not a web address nor a path in the repository';
  }
  const [path, fragment] = target.split('#');
  if (path.startsWith('/')) return 'an absolute path: write it relative to this file';
  const resolved = path === '' ? file : resolve(dirname(file), decodeURI(path));
  if (resolved !== ROOT && !resolved.startsWith(ROOT + sep)) return 'leaves the repository';
  if (!existsSync(resolved)) return 'no such file';
  if (fragment === undefined || statSync(resolved).isDirectory() || !resolved.endsWith('.md')) return undefined;
  return anchors(readFileSync(resolved, 'utf8')).has(fragment) ? undefined : `no heading #${fragment} there`;
}

describe('links in the documentation', () => {
  const files = markdownFiles();

  it('should find the documentation', () => {
    expect(files.map((file) => relative(ROOT, file))).toEqual(
      expect.arrayContaining(['README.md', join('docs', 'architecture.md'), join('bench', 'README.md')]),
    );
  });

  it('should resolve every relative link inside the repository, headings included', () => {
    const broken = files.flatMap((file) =>
      [...prose(readFileSync(file, 'utf8')).matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)|^\[[^\]]+\]:\s*(\S+)/gm)]
        .map((match) => match[1] ?? match[2])
        .map((target) => ({ link: `${relative(ROOT, file)}: ${target}`, problem: problem(file, target) }))
        .filter((link) => link.problem !== undefined),
    );
    expect(broken).toEqual([]);
  });
});
