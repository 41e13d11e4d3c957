// Lists the functions of src/ longer than a limit (issue 58: a run reads as its states; a function a
// reader must hold whole in mind stays short). test/unit/function-lengths.test.ts fails on any over
// FUNCTION_MAX_LINES outside src/demo/ and the allowance list there.
//
//   node --import tsx scripts/function-lengths.ts [limit] [folder ...]
//
// A function is a declaration, a function expression, an arrow function, a method, a constructor
// or an accessor; its length counts its lines from its first token (after any comment above it)
// to its closing one. A nested function is counted on its own, and within its outer one.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The longest a function in src/ (outside src/demo/) may be, in lines. */
export const FUNCTION_MAX_LINES = 130;

export interface LongFunction {
  /** The file, relative to the root given, with forward slashes. */
  file: string;
  /** The function's name as a reader finds it: `name`, `Class.method`, or `<arrow>` with its line. */
  name: string;
  line: number;
  lines: number;
}

/** Every .ts file under `dir` (absolute), leaving out declaration files. */
function typeScriptFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  const own = node.name !== undefined ? node.name.getText(source) : undefined;
  const parent = node.parent;
  const holder =
    ts.isClassLike(parent) && parent.name !== undefined
      ? `${parent.name.text}.`
      : ts.isObjectLiteralExpression(parent) && ts.isVariableDeclaration(parent.parent)
        ? `${parent.parent.name.getText(source)}.`
        : '';
  if (ts.isConstructorDeclaration(node)) return `${holder}constructor`;
  if (own !== undefined) return `${holder}${own}`;
  // An unnamed function takes the name it is bound to, if any.
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return `${holder}${parent.name.getText(source)}`;
  return ts.isArrowFunction(node) ? '<arrow>' : '<function>';
}

/** The functions of one file longer than `limit` lines. */
export function longFunctionsInFile(file: string, text: string, limit: number): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const fn = node;
      const first = source.getLineAndCharacterOfPosition(fn.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(fn.getEnd()).line;
      const lines = last - first + 1;
      if (lines > limit) found.push({ file, name: functionName(fn, source), line: first + 1, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The functions longer than `limit` lines in the .ts files under each of `folders`, relative to `root`. */
export function longFunctions(root: string, folders: string[], limit: number): LongFunction[] {
  return folders.flatMap((folder) =>
    typeScriptFiles(path.join(root, folder)).flatMap((full) =>
      longFunctionsInFile(path.relative(root, full).split(path.sep).join('/'), fs.readFileSync(full, 'utf8'), limit),
    ),
  );
}

export function formatLongFunction(f: LongFunction): string {
  return `${f.file}:${f.line} ${f.name} ${f.lines} lines`;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const [limitArg, ...folders] = process.argv.slice(2);
  const limit = limitArg === undefined ? FUNCTION_MAX_LINES : Number(limitArg);
  if (!Number.isInteger(limit) || limit < 1) {
    process.stderr.write(`function-lengths: the limit must be a whole number of lines above 0, not ${JSON.stringify(limitArg)}\n`);
    process.exit(2);
  }
  const found = longFunctions(repoRoot, folders.length > 0 ? folders : ['src'], limit).sort((a, b) => b.lines - a.lines);
  for (const f of found) process.stdout.write(`${formatLongFunction(f)}\n`);
  process.stdout.write(`${found.length} function(s) over ${limit} lines\n`);
}
