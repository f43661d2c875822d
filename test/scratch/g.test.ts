import { it } from "vitest";
import { runCli } from "../support/cli.js";
it("x", async () => {
for (const n of ["code-review", "code-review-parallel"]) {
  const t = await runCli("test", n); console.log(t.stdout.split("\n").slice(-3).join("\n"));
  for (const s of ["shortest", "simple"]) { const p = JSON.parse((await runCli("paths", n, "--json", "--strategy", s)).stdout); console.log(n, s, p.paths.length); }
  const p = JSON.parse((await runCli("paths", n, "--json", "--events", "override,redo,cancel")).stdout); console.log(n, "events", p.paths.length);
}
});
