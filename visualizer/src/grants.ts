import type { GrantView } from "../../src/inspect/grant-view.js";
import { deadlineBadge } from "./deadlines.js";
import { h } from "./dom.js";
import { getJson, postJson } from "./net.js";

/** A grant request a run waits on, live or suspended: what the banner starts from. */
export interface Grant {
  proposalId: string;
  stageId: string;
  tool: string;
  argsSummary: string;
  /** When nobody answering is taken as the grants block's timeout fallback (ISO time). */
  deadline?: string;
}

/**
 * The grant requests a run waits on, each a banner: the call, why it needs a grant and its
 * arguments (asked of the server once per request, again while the stage's transcript does not
 * hold the call yet), with Approve and Deny.
 */
export class GrantBanners {
  readonly element = h("section", { class: "grants", "aria-label": "grant requests" });
  private readonly banners = new Map<string, HTMLElement>();
  private readonly asking = new Set<string>();

  constructor(private readonly api: string) {}

  show(grants: readonly Grant[]): void {
    const waiting = new Map(grants.map((g) => [g.proposalId, g]));
    for (const [id, banner] of this.banners)
      if (!waiting.has(id)) {
        banner.remove();
        this.banners.delete(id);
      }
    for (const grant of waiting.values()) {
      if (!this.banners.has(grant.proposalId)) {
        const banner = this.banner(grant);
        this.banners.set(grant.proposalId, banner);
        this.element.append(banner);
      }
      void this.describe(grant.proposalId);
    }
  }

  /** Fills a banner's reason and arguments in, once the server has them. */
  private async describe(proposalId: string): Promise<void> {
    const banner = this.banners.get(proposalId);
    if (!banner || banner.querySelector("[data-grant-args]") || this.asking.has(proposalId)) return;
    this.asking.add(proposalId);
    try {
      const view = await getJson<GrantView>(`${this.api}/grants/${encodeURIComponent(proposalId)}`);
      const reason = banner.querySelector("[data-grant-reason]");
      if (reason) reason.textContent = view.reason;
      if (view.args !== undefined)
        banner
          .querySelector(".grant-body")
          ?.append(
            h(
              "pre",
              { class: "grant-args", "data-grant-args": proposalId },
              JSON.stringify(view.args, null, 2),
            ),
          );
    } catch {
      // Answered or withdrawn meanwhile: the next news removes its banner.
    } finally {
      this.asking.delete(proposalId);
    }
  }

  private banner(g: Grant): HTMLElement {
    const button = (decision: "approve" | "deny", label: string) =>
      h(
        "button",
        {
          type: "button",
          class: decision,
          "data-grant": g.proposalId,
          "data-decision": decision,
          onclick: () => void this.answer(g.proposalId, decision),
        },
        label,
      );
    return h(
      "div",
      { class: "grant", "data-proposal": g.proposalId },
      h(
        "div",
        { class: "grant-body" },
        h(
          "span",
          { class: "grant-text" },
          h("b", {}, g.stageId),
          " asks for ",
          h("code", {}, `${g.tool}(${g.argsSummary})`),
          " ",
          deadlineBadge(g.deadline),
        ),
        h("span", { class: "grant-reason", "data-grant-reason": g.proposalId }),
      ),
      button("approve", "Approve"),
      button("deny", "Deny"),
    );
  }

  private async answer(proposalId: string, decision: "approve" | "deny"): Promise<void> {
    for (const b of this.element.querySelectorAll<HTMLButtonElement>(
      `button[data-grant="${CSS.escape(proposalId)}"]`,
    ))
      b.disabled = true;
    await postJson(`${this.api}/grants/${encodeURIComponent(proposalId)}`, { decision });
  }
}
