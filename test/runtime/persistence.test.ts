import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { leaseOwner, ownerIsGone } from "../../src/runtime/lease-owner.js";

const exitedPid = () => spawnSync(process.execPath, ["-e", "0"]).pid;

describe("a lease owner", () => {
  it("is gone when it names a process of this machine that has exited", () => {
    const exited = exitedPid();
    expect(ownerIsGone(leaseOwner(exited))).toBe(true);
  });

  it("is not gone while its process lives, nor when it lives on another machine", () => {
    expect(ownerIsGone(leaseOwner())).toBe(false);
    expect(ownerIsGone(leaseOwner(process.ppid))).toBe(false);
    expect(ownerIsGone(leaseOwner(exitedPid()).replace(hostname(), "elsewhere.example"))).toBe(
      false,
    );
    expect(ownerIsGone("not an owner")).toBe(false);
  });

  it("in another pid namespace (a container sharing the host name) is never taken for gone", () => {
    const [host, , pid, nonce] = leaseOwner(exitedPid()).split(":");
    expect(ownerIsGone(`${host}:1:${pid}:${nonce}`)).toBe(false);
  });
});
