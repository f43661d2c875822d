#!/usr/bin/env node
// Runs the command line's bundle `npm run build` writes (scripts/build-bundle.mjs). main()
// reports its own errors; this catches only what happens before it can (a missing build).
try {
  const { main } = await import("../dist/cli.mjs");
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`stagechart: internal error: ${error?.message ?? error}\n`);
  process.stderr.write(
    process.env.STAGECHART_DEBUG
      ? `${error?.stack}\n`
      : "(set STAGECHART_DEBUG=1 to see the stack)\n",
  );
  process.exitCode = 1;
}
