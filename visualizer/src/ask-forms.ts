import type { InputRequest } from "../../src/compiler/ask-stage.js";
import { deadlineBadge } from "./deadlines.js";
import { h } from "./dom.js";

type Ask = Pick<InputRequest, "stageId" | "stageExecutionId" | "prompt" | "schema" | "deadline">;

/**
 * The questions a run's ask stages wait on, each with a JSON answer box and a submit button
 * (`data-ask="<stageExecutionId>"`); the server checks the value and its refusal is shown under
 * the form. A form stays as typed in while its question waits: only new ones are added.
 */
export class AskForms {
  readonly element = h("section", { class: "asks", "aria-label": "questions" });
  private readonly forms = new Map<string, HTMLFormElement>();

  constructor(
    private readonly submit: (stageExecutionId: string, value: unknown) => Promise<void>,
  ) {}

  show(asks: readonly Ask[]): void {
    const waiting = new Map(asks.map((ask) => [ask.stageExecutionId, ask]));
    for (const [id, form] of this.forms)
      if (!waiting.has(id)) {
        form.remove();
        this.forms.delete(id);
      }
    for (const ask of waiting.values())
      if (!this.forms.has(ask.stageExecutionId)) {
        const form = this.formOf(ask);
        this.forms.set(ask.stageExecutionId, form);
        this.element.append(form);
      }
  }

  private formOf(ask: Ask): HTMLFormElement {
    const answer = h("textarea", {
      class: "ask-value",
      rows: 3,
      "aria-label": `answer to ${ask.stageId} (JSON)`,
      "data-ask-value": ask.stageExecutionId,
      placeholder: JSON.stringify(ask.schema),
    });
    const problem = h("p", { class: "error ask-error", "data-ask-error": ask.stageExecutionId });
    const button = h(
      "button",
      { type: "submit", class: "approve", "data-ask": ask.stageExecutionId },
      "Answer",
    );
    const allowed = allowedValues(ask.schema);
    const form = h(
      "form",
      { class: "ask", "data-ask-form": ask.stageExecutionId },
      h(
        "p",
        { class: "ask-text" },
        h("b", {}, ask.stageId),
        " asks: ",
        ask.prompt,
        " ",
        deadlineBadge(ask.deadline),
      ),
      allowed.length > 0 &&
        h(
          "ul",
          { class: "ask-allowed", "data-ask-allowed": ask.stageExecutionId },
          ...allowed.map((line) => h("li", {}, line)),
        ),
      answer,
      button,
      problem,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      problem.textContent = "";
      let value: unknown;
      try {
        value = JSON.parse(answer.value);
      } catch {
        // Plain text stands for a string, as on the terminal.
        value = answer.value;
      }
      button.disabled = true;
      this.submit(ask.stageExecutionId, value).catch((error: Error) => {
        problem.textContent = error.message;
        button.disabled = false;
      });
    });
    return form;
  }
}

/**
 * The values an answer's schema allows where it lists them (`enum`, `const`), one line per place
 * in the answer: `decision: one of accepted, rejected` (`one of …` for the answer itself, `[]`
 * for an array's items), through nested properties and items.
 */
export function allowedValues(schema: unknown, path = ""): string[] {
  if (!isObject(schema)) return [];
  const lines: string[] = [];
  const listed = Array.isArray(schema.enum)
    ? schema.enum
    : "const" in schema
      ? [schema.const]
      : undefined;
  if (listed) lines.push(`${path ? `${path}: ` : ""}one of ${listed.map(shownValue).join(", ")}`);
  if (isObject(schema.properties))
    for (const [name, property] of Object.entries(schema.properties))
      lines.push(...allowedValues(property, path ? `${path}.${name}` : name));
  if (isObject(schema.items)) lines.push(...allowedValues(schema.items, `${path}[]`));
  return lines;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const shownValue = (value: unknown): string =>
  typeof value === "string" ? value : JSON.stringify(value);
