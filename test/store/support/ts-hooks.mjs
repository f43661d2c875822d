// Module hooks that let a plain `node` child process import the TypeScript sources directly
// (Node 20 cannot strip types itself): `.js` specifiers fall back to `.ts`, which is transpiled.
import { readFile } from "node:fs/promises";
import ts from "typescript";

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    if (!specifier.endsWith(".js")) throw error;
    return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
  }
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith(".ts")) return nextLoad(url, context);
  const { outputText } = ts.transpileModule(await readFile(new URL(url), "utf8"), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: url,
  });
  return { format: "module", source: outputText, shortCircuit: true };
}
