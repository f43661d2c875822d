import { Worker } from "node:worker_threads";

/**
 * Swaps `path` (a file or directory inside the root) with a symbolic link to `outsideTarget`
 * and back, as fast as it can, on a thread of its own, so the swaps land between whatever a
 * tool does on the main thread. A file is swapped atomically (a link, then a fresh copy of the
 * file, renamed over it), so the path never goes missing; a directory cannot be renamed over a
 * link, so it is moved away for a moment. Whatever a tool creates at the path while it is away
 * is removed before the directory comes back. Resolves once swapping has begun; `stop` ends it
 * with the real entry in place and says how many swaps were made.
 */
export async function startSwapping(
  path: string,
  outsideTarget: string,
): Promise<{ stop(): Promise<number> }> {
  const stopFlag = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(SWAPPER, {
    eval: true,
    workerData: { path, outsideTarget, stopFlag },
  });
  const waiting: ((message: unknown) => void)[] = [];
  const failed = new Promise<never>((_, reject) => worker.once("error", reject));
  worker.on("message", (message) => waiting.shift()?.(message));
  const next = () =>
    Promise.race([new Promise<unknown>((resolve) => waiting.push(resolve)), failed]);
  const started = next();
  const swaps = next();
  await started;
  return {
    stop: async () => {
      Atomics.store(stopFlag, 0, 1);
      const made = Number(await swaps);
      await worker.terminate();
      return made;
    },
  };
}

const SWAPPER = `
const { workerData, parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const { path, outsideTarget, stopFlag } = workerData;
const [away, link, kept] = [path + ".away", path + ".link", path + ".kept"];
const clear = () => {
  try {
    const entry = fs.lstatSync(path);
    if (entry.isDirectory()) fs.rmSync(path, { recursive: true });
    else fs.unlinkSync(path);
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
  }
};
// A tool may create something at the path in the moment it is clear: clear it again and retry.
const put = (make) => {
  for (;;) {
    try {
      clear();
      return make();
    } catch (error) {
      if (!["EEXIST", "ENOTEMPTY", "EISDIR", "ENOTDIR"].includes(error.code)) throw error;
    }
  }
};
const isFile = fs.lstatSync(path).isFile();
// The file's own inode, kept under another name: a hard link to it is the cheapest fresh copy.
if (isFile) fs.linkSync(path, kept);
let swaps = 0;
while (Atomics.load(stopFlag, 0) === 0) {
  if (isFile) {
    fs.symlinkSync(outsideTarget, link);
    fs.renameSync(link, path);
    fs.linkSync(kept, away);
    fs.renameSync(away, path);
  } else {
    fs.renameSync(path, away);
    put(() => fs.symlinkSync(outsideTarget, path));
    put(() => fs.renameSync(away, path));
  }
  swaps += 1;
  if (swaps === 1) parentPort.postMessage("swapping");
}
if (isFile) fs.unlinkSync(kept);
parentPort.postMessage(swaps);
`;
