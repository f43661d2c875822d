import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { leaseOwner, ownerIsGone } from "../../src/runtime/persistence.js";

describe("a lease owner", () => {
  it("is gone when it names a process of this machine that has exited", () => {
    const exited = spawnSync(process.execPath, ["-e", "0"]).pid;
    expect(ownerIsGone(`${hostname()}:${exited}:abcd1234`)).toBe(true);
  });

  it("is not gone while its process lives, nor when it lives on another machine", () => {
    expect(ownerIsGone(leaseOwner())).toBe(false);
    expect(ownerIsGone(`${hostname()}:${process.ppid}:abcd1234`)).toBe(false);
    expect(ownerIsGone("elsewhere.example:1:abcd1234")).toBe(false);
    expect(ownerIsGone("not an owner")).toBe(false);
  });
});
