/**
 * The import rules of src/, run by `npm run lint:layers` (part of `npm test`).
 *
 * The folders form a stack, bottom to top; a file imports only from its own folder or a lower
 * one, so a layer can be read and tested without the ones above it:
 *
 *   ground files (errors, error-codes, zod, paths, files, version)
 *   events       the audit event vocabulary every layer emits or reads
 *   secrets      what is a secret and how it is kept out of output
 *   definitions  loading and checking stage, pipeline and script files
 *   tools        the built-in tools and MCP servers' tools
 *   compiler     the stage and pipeline machines, and the ports they call
 *   models       the model interface, providers, the scripted model
 *   runtime      hosts, stage services, the run API, durable steps
 *   store        SQLite and PostgreSQL stores
 *   bundles      definition files stored with a queued run
 *   testing      model-based testing
 *   inspect      the inspection stream and the visualizer's server
 *   worker       the process that runs queued runs
 *   serve        the HTTP API that starts, answers and controls runs, and its webhooks
 *   cli          the command line
 */
const LAYERS = [
  "events",
  "secrets",
  "definitions",
  "tools",
  "compiler",
  "models",
  "runtime",
  "store",
  "bundles",
  "testing",
  "inspect",
  "worker",
  "serve",
  "cli",
];

const GROUND = "^src/[^/]+[.]ts$";

const upward = LAYERS.map((layer, index) => ({
  name: `${layer}-imports-only-downward`,
  comment: `src/${layer} may import only from itself and the layers below it`,
  severity: "error",
  from: { path: `^src/${layer}/` },
  to: {
    path: [...LAYERS.slice(index + 1).map((higher) => `^src/${higher}/`), "^src/index[.]ts$"],
  },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: "ground-imports-only-ground",
      comment: "the files at the root of src/ import nothing from its folders",
      severity: "error",
      from: { path: GROUND, pathNot: "^src/index[.]ts$" },
      to: { path: "^src/[^/]+/" },
    },
    {
      name: "no-import-cycles",
      comment: "files of src/ do not import each other in a loop",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "source-never-imports-tests",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    exclude: { path: "^(dist|node_modules)/" },
  },
};
