import { createServer } from "node:net";
import { main } from "../../src/cli/main.js";

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `stagechart inspect …` in-process, until the test sends it Ctrl-C. */
export function startInspect(...argv: string[]) {
  let stdout = "";
  let stderr = "";
  let announced: (url: string) => void = () => {};
  const url = new Promise<string>((resolve) => {
    announced = resolve;
  });
  const exit = main(["inspect", ...argv], {
    stdout: (text) => {
      stdout += text;
      const found = /http:\/\/\S+/.exec(stdout)?.[0];
      if (found) announced(found);
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { url, exit, output: () => ({ stdout, stderr }), all: () => stdout + stderr };
}
