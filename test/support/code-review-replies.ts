import type { ServerReply } from "./llm-server.js";

const rename = {
  path: "src/auth.ts",
  old: "export const auth",
  new: "export const authentication",
};

/**
 * What a model answers through the bundled code-review pipeline, one reply per request, as the
 * pipeline's scripted model does: Plan tries an Edit (denied when headless), greps, plans;
 * Execute edits and reports the diff; Review approves.
 */
export const CODE_REVIEW_REPLIES: readonly ServerReply[] = [
  { toolCalls: [{ name: "Edit", args: rename }], usage: { input: 410, output: 38 } },
  { toolCalls: [{ name: "Grep", args: { pattern: "auth" } }], usage: { input: 520, output: 21 } },
  {
    toolCalls: [
      {
        name: "submit_plan",
        args: {
          summary: "Rename the auth function to authentication.",
          steps: ["rename auth to authentication in src/auth.ts", "run the tests"],
        },
      },
    ],
    usage: { input: 690, output: 64 },
  },
  { toolCalls: [{ name: "Edit", args: rename }], usage: { input: 730, output: 40 } },
  {
    toolCalls: [
      {
        name: "submit_diff",
        args: {
          summary: "Renamed auth to authentication in src/auth.ts.",
          files: [{ path: "src/auth.ts", change: "modified" }],
        },
      },
    ],
    usage: { input: 810, output: 52 },
  },
  {
    toolCalls: [
      {
        name: "submit_review",
        args: { approved: true, summary: "The rename matches the plan.", findings: [] },
      },
    ],
    usage: { input: 640, output: 33 },
  },
];
