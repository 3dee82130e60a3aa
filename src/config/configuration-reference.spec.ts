import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { IsOptional } from 'class-validator';
import {
  configurationReference,
  REFERENCE_END,
  REFERENCE_START,
  variableNames,
  withReference,
} from './configuration-reference';
import { Documented } from './documented.decorator';
import { EnvironmentVariables } from './environment-variables';

const ROOT = join(__dirname, '..', '..');
const document = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
const generated = document.slice(document.indexOf(REFERENCE_START), document.indexOf(REFERENCE_END));
const handWritten = document.replace(generated, '');

/** The generated tables' rows: each variable and its default as the document gives them. */
function documentedDefaults(): Map<string, string> {
  const rows = [...generated.matchAll(/^\| `([A-Z0-9_]+)` \| .* \| (.*) \|$/gm)];
  return new Map(rows.map(([, name, byDefault]) => [name, byDefault]));
}

/** The service's TypeScript files outside the configuration, tests excluded. */
function sourceFiles(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === __dirname ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('the configuration reference (docs/configuration.md)', () => {
  it('should be what npm run docs:config generates from the schema', () => {
    expect(withReference(document)).toBe(document);
  });

  it('should document every variable the schema reads, and no other', () => {
    expect([...documentedDefaults().keys()].sort()).toEqual(variableNames(EnvironmentVariables).sort());
  });

  it('should give each default the schema declares as the schema declares it', () => {
    const declared = Object.entries(new EnvironmentVariables()).filter(([, value]) => value !== undefined);
    expect(declared.length).toBeGreaterThan(20);
    const byDefault = documentedDefaults();
    for (const [name, value] of declared) expect([name, byDefault.get(name)]).toEqual([name, `\`${String(value)}\``]);
  });

  it('should list apart every variable the code reads outside the schema', () => {
    const schema = new Set(variableNames(EnvironmentVariables));
    const read = sourceFiles().flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      const names = [
        ...text.matchAll(/\bOTEL_[A-Z0-9_]*[A-Z0-9]\b/g),
        ...text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g),
      ].map((match) => match[1] ?? match[0]);
      return names.filter((name) => !schema.has(name)).map((name) => ({ name, file: relative(ROOT, file) }));
    });
    expect(read.length).toBeGreaterThan(10);
    const missing = new Map(
      read.filter(({ name }) => !handWritten.includes(`\`${name}\``)).map((r) => [r.name, r.file]),
    );
    expect([...missing]).toEqual([]);
  });

  describe('when a variable of the schema has no description', () => {
    class Undocumented {
      @IsOptional()
      SOMETHING_NEW?: string;
    }

    it('should refuse to generate it, naming the variable', () => {
      expect(() => configurationReference(Undocumented)).toThrow('SOMETHING_NEW has no @Documented description');
    });
  });

  describe('when a variable has both a default value and a default in words', () => {
    class Twice {
      @Documented('Server', 'Twice.', 'sixty')
      @IsOptional()
      TWICE = '60';
    }

    it('should refuse to generate it, naming the variable', () => {
      expect(() => configurationReference(Twice)).toThrow(/^TWICE must have either a default value/);
    });
  });
});
