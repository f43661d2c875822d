import { h } from "./dom.js";
import { postJson } from "./net.js";

/**
 * Cancel, override and redo for a running run: each goes to the process that owns the run
 * (through the store's control queue), which applies or refuses it; the answer is shown.
 */
export class RunControls {
  readonly element = h("section", {
    class: "controls",
    "aria-label": "run controls",
    hidden: true,
  });
  private readonly stage = h("select", { "aria-label": "stage", "data-control-stage": "" });
  private readonly reason = h("input", {
    type: "text",
    placeholder: "reason (needed to override)",
    "aria-label": "reason",
    "data-control-reason": "",
  });
  private readonly result = h("span", { class: "control-result", "data-control-result": "" });

  constructor(private readonly api: string) {
    const button = (control: string, label: string, body: () => unknown) =>
      h(
        "button",
        { type: "button", "data-control": control, onclick: () => void this.send(control, body()) },
        label,
      );
    this.element.append(
      button("cancel", "Cancel run", () => ({ reason: "cancelled from the visualizer" })),
      this.stage,
      this.reason,
      button("override", "Override to stage", () => ({
        to: this.stage.value,
        reason: this.reason.value,
      })),
      button("redo", "Redo stage", () => ({ stage: this.stage.value })),
      this.result,
    );
  }

  /** Shown while the run is running, offering its stages. */
  render(status: string, stageIds: readonly string[]): void {
    this.element.hidden = status !== "running";
    const known = [...this.stage.options].map((option) => option.value);
    if (known.join() !== stageIds.join())
      this.stage.replaceChildren(...stageIds.map((id) => h("option", { value: id }, id)));
  }

  /** `POST …/cancel`, `…/override` or `…/redo` with its body. */
  private async send(control: string, body: unknown): Promise<void> {
    this.result.textContent = "asking the run's process…";
    try {
      const answer = await postJson<{ control: string; outcome: string }>(
        `${this.api}/${control}`,
        body,
      );
      this.result.textContent = `${answer.control} ${answer.outcome}`;
    } catch (error) {
      this.result.textContent = (error as Error).message;
    }
  }
}
