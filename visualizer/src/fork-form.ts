import { h } from "./dom.js";
import { getJson, postJson } from "./net.js";

/**
 * Time travel: a new run from the step the scrubber shows, with ctx changes given as
 * `stagechart fork --set` takes them (`key=value` a line, JSON values parsed), started by the
 * server and opened. A server that does not start runs says so, and the form stays closed.
 */
export class ForkForm {
  readonly element = h("section", { class: "fork", hidden: true, "data-fork-form": "" });
  readonly opener = h(
    "button",
    { type: "button", class: "fork-open", "data-fork-open": "" },
    "Fork from this step…",
  );
  private readonly heading = h("strong", {});
  private readonly edits = h("textarea", {
    rows: 3,
    placeholder: 'task=rename auth to authn\nlimits={"turns": 3}',
    "aria-label": "ctx changes, one key=value a line",
    "data-fork-set": "",
  });
  private readonly error = h("p", { class: "error", "data-fork-error": "" });
  private step = 0;

  constructor(private readonly api: string) {
    this.opener.addEventListener("click", () => {
      this.element.hidden = !this.element.hidden;
    });
    // A refusal is about what was sent: it goes once the changes are edited.
    this.edits.addEventListener("input", () => {
      this.error.textContent = "";
    });
    this.element.append(
      this.heading,
      h(
        "label",
        {},
        "ctx changes, one ",
        h("code", {}, "key=value"),
        " a line (JSON values are parsed), as ",
        h("code", {}, "stagechart fork --set"),
        " takes them:",
      ),
      this.edits,
      h(
        "div",
        { class: "fork-actions" },
        h(
          "button",
          { type: "button", "data-fork": "", onclick: () => void this.fork() },
          "Fork and open",
        ),
        h("button", { type: "button", onclick: () => this.close() }, "Cancel"),
      ),
      this.error,
    );
    void getJson<{ startsRuns?: boolean }>("/api/v1/health")
      .then((health) => {
        if (health.startsRuns) return;
        this.opener.disabled = true;
        this.opener.title =
          "this server does not start runs: fork from stagechart inspect, or with stagechart fork";
      })
      .catch(() => {});
  }

  /** The step a fork starts from: the one the scrubber shows. */
  at(step: number, runId: string): void {
    this.step = step;
    this.opener.textContent = `Fork from step ${step}…`;
    this.heading.textContent = `A new run from step ${step} of ${runId}`;
  }

  private close(): void {
    this.element.hidden = true;
    this.error.textContent = "";
  }

  private async fork(): Promise<void> {
    this.error.textContent = "";
    const set = ctxChanges(this.edits.value);
    if (typeof set === "string") {
      this.error.textContent = set;
      return;
    }
    try {
      const forked = await postJson<{ runId: string }>(`${this.api}/fork`, {
        at: this.step,
        ...(Object.keys(set).length > 0 && { set }),
      });
      location.assign(`/runs/${encodeURIComponent(forked.runId)}`);
    } catch (error) {
      this.error.textContent = (error as Error).message;
    }
  }
}

/** `key=value` lines as ctx changes, the value JSON when it parses (else the text); or why not. */
export function ctxChanges(text: string): Record<string, unknown> | string {
  const changes: Record<string, unknown> = {};
  for (const line of text.split("\n").map((l) => l.trim())) {
    if (!line) continue;
    const at = line.indexOf("=");
    if (at <= 0) return `a ctx change is key=value, got "${line}"`;
    const raw = line.slice(at + 1);
    try {
      changes[line.slice(0, at).trim()] = JSON.parse(raw);
    } catch {
      changes[line.slice(0, at).trim()] = raw;
    }
  }
  return changes;
}
