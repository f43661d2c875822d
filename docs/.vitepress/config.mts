import { defineConfig } from "vitepress";

// The documentation site. `npm run docs:build` builds it offline; a link to a page that does not
// exist fails the build (VitePress's dead-link check), which `npm test` runs.
export default defineConfig({
  title: "stagechart",
  description: "A statechart engine for LLM agent pipelines on XState v5",
  cleanUrls: true,
  // Pages outside the site: the maintainers' notes live beside the code.
  srcExclude: ["**/README.md"],
  themeConfig: {
    search: { provider: "local" },
    nav: [
      { text: "Guide", link: "/guide/getting-started" },
      { text: "How-to", link: "/how-to/models" },
      { text: "Reference", link: "/reference/cli" },
    ],
    sidebar: [
      {
        text: "Getting started",
        items: [
          { text: "Your first pipeline", link: "/guide/getting-started" },
          { text: "The scripted model", link: "/guide/scripted-model" },
        ],
      },
      {
        text: "Concepts",
        items: [
          { text: "Stage files", link: "/guide/stages" },
          { text: "Pipeline files", link: "/guide/pipelines" },
          { text: "The stage lifecycle", link: "/guide/lifecycle" },
          { text: "Running pipelines", link: "/guide/running" },
          { text: "Durable runs", link: "/guide/durability" },
          { text: "Human input", link: "/guide/human-input" },
          { text: "History and fork", link: "/guide/history-and-fork" },
        ],
      },
      {
        text: "How-to guides",
        items: [
          { text: "Models and providers", link: "/how-to/models" },
          { text: "Cost", link: "/how-to/cost" },
          { text: "Budgets", link: "/how-to/budgets" },
          { text: "Deadlines on waits", link: "/how-to/deadlines" },
          { text: "Map groups", link: "/how-to/map-groups" },
          { text: "Streaming replies", link: "/how-to/streaming" },
          { text: "Tracing (OpenTelemetry)", link: "/how-to/tracing" },
          { text: "MCP tool servers", link: "/how-to/mcp" },
          { text: "Built-in tools and the sandbox", link: "/how-to/sandbox" },
          { text: "PostgreSQL and workers", link: "/how-to/postgres" },
          { text: "Serving runs over HTTP", link: "/how-to/serve" },
          { text: "Retention: pruning old runs", link: "/how-to/retention" },
          { text: "Visual debugging", link: "/how-to/inspect" },
          { text: "Model-based testing", link: "/how-to/model-based-testing" },
          { text: "The library and embedding", link: "/how-to/embedding" },
        ],
      },
      {
        text: "Examples",
        items: [
          { text: "The task lifecycle", link: "/examples/task-lifecycle" },
          { text: "The arena debate", link: "/examples/arena-debate" },
          { text: "pi-workflows directories", link: "/examples/pi-workflows" },
        ],
      },
      {
        text: "Reference",
        items: [
          { text: "Command line", link: "/reference/cli" },
          { text: "CLI help (generated)", link: "/reference/cli-help" },
          { text: "Error codes (generated)", link: "/reference/error-codes" },
          { text: "Audit events (generated)", link: "/reference/audit-events" },
          { text: "Dependencies, and why", link: "/reference/dependencies" },
          { text: "Benchmarks", link: "/benchmarks" },
          { text: "Scaling", link: "/scaling" },
        ],
      },
    ],
  },
});
