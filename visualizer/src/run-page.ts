import type { InputRequest } from "../../src/compiler/ask-stage.js";
import type { AuditEvent } from "../../src/events/audit.js";
import type { ModelDelta } from "../../src/events/run-events.js";
import type { Chart, ChartLayouts } from "../../src/inspect/chart.js";
import type { ChartState } from "../../src/inspect/chart-state.js";
import type { LiveRoot, PendingGrant } from "../../src/inspect/live.js";
import type { StreamingReply } from "../../src/inspect/live-replies.js";
import type { RunView } from "../../src/inspect/run-view.js";
import type { Step, StepView } from "../../src/inspect/steps.js";
import { formatUsd, type TokenCount } from "../../src/inspect/token-usage.js";
import { AskForms } from "./ask-forms.js";
import { ChartView } from "./chart-view.js";
import { RunControls } from "./controls.js";
import { h } from "./dom.js";
import { ForkForm } from "./fork-form.js";
import { GrantBanners } from "./grants.js";
import { getJson, type News, type PageSocket, postJson } from "./net.js";
import { runWhenThere } from "./run-waiting.js";
import { StreamingReplyView } from "./streaming-reply.js";
import { outcomesOf, stepOfSeq, summary } from "./timeline.js";
import { TimelinePanel } from "./timeline-panel.js";

/** One run: its statechart, the step scrubber, pending grants, the timeline and stage details. */
export async function runPage(root: HTMLElement, runId: string, socket: PageSocket): Promise<void> {
  const api = `/api/v1/runs/${encodeURIComponent(runId)}`;
  // The chart takes longest (the server compiles the pipeline, ELK lays it out): asked first.
  const askGraph = () => getJson<{ pipeline: Chart; layouts: ChartLayouts }>(`${api}/graph`);
  let graphAsked = askGraph();
  graphAsked.catch(() => {});
  const stepsAsked = getJson<Step[]>(`${api}/steps`);
  stepsAsked.catch(() => {});
  let run = await runWhenThere(root, runId, socket);
  // A page that waited for its run asked for these before it was there: it asks again.
  let steps = await stepsAsked.catch(() => getJson<Step[]>(`${api}/steps`));
  graphAsked = graphAsked.catch(() => askGraph());
  const events: AuditEvent[] = [...run.timeline];
  let scrub: number | "live" = "live";
  let live: LiveRoot | undefined;
  let liveGrants: PendingGrant[] = [];
  let liveAsks: InputRequest[] = [];
  const streaming = new StreamingReplyView();
  streaming.audited(events);
  /** The stage execution whose details are open, and which showing of it is the latest. */
  let shownExecution: string | undefined;
  let showings = 0;
  const asks = new AskForms(async (stageExecutionId, value) => {
    await postJson(`${api}/asks/${encodeURIComponent(stageExecutionId)}`, { value });
  });

  const title = h("h1", {}, runId);
  const status = h("span", { class: "status", "data-status": run.status }, run.status);
  const facts = h("span", { class: "facts" });
  const grants = new GrantBanners(api);
  const controls = new RunControls(api);
  let stageIds: string[] = [];
  let descriptions = new Map<string, string>();
  const range = h("input", {
    type: "range",
    min: 1,
    max: Math.max(steps.length, 1),
    value: Math.max(steps.length, 1),
    "aria-label": "step",
    "data-scrubber": "",
  });
  const stepLabel = h("span", { class: "step-label", "data-step-label": "" });
  const liveButton = h("button", { class: "live-button", type: "button" }, "latest");
  const chartHost = h("div", { class: "chart-host" });
  const timeline = new TimelinePanel();
  const fork = new ForkForm(api);
  const details = h(
    "aside",
    { class: "details" },
    h(
      "p",
      { class: "hint" },
      "Click a stage or a timeline row for its transcript, tool calls and tokens.",
    ),
  );
  const context = h("pre", { class: "context" });
  root.replaceChildren(
    h("section", { class: "run-head" }, title, status, facts, forkedFrom(runId, events)),
    grants.element,
    asks.element,
    controls.element,
    h(
      "section",
      { class: "scrubber" },
      h("span", {}, "step"),
      range,
      stepLabel,
      liveButton,
      fork.opener,
    ),
    fork.element,
    chartHost,
    h(
      "section",
      { class: "lower" },
      h("div", { class: "left" }, timeline.element),
      h(
        "div",
        { class: "right" },
        details,
        h("details", { class: "context-box" }, h("summary", {}, "Context at this step"), context),
      ),
    ),
  );
  document.getElementById("where")?.replaceChildren(`${run.pipelineId} · ${runId}`);

  let chart: ChartView | undefined;
  try {
    const graph = await graphAsked;
    chart = new ChartView(graph.pipeline, graph.layouts);
    stageIds = stagesOf(graph.pipeline.root);
    descriptions = descriptionsOf(graph.pipeline.root);
    chartHost.replaceChildren(chart.element);
    chart.draw();
    chart.pickStage((stageId) => {
      chart?.select(stageId);
      const execution = events.findLast(
        (e) => e.stageId === stageId && e.stageExecutionId,
      )?.stageExecutionId;
      if (execution) void showStage(execution);
    });
  } catch (error) {
    chartHost.replaceChildren(h("p", { class: "error" }, `No chart: ${(error as Error).message}`));
  }
  // After the chart: fitting it reads the page's layout, which a thousand rows make slow.
  timeline.add(events);
  // A row picked: the run as it was at the step that stored it, its stage marked and detailed.
  timeline.pick(({ seq, stageId, stageExecutionId }) => {
    const step = stepOfSeq(steps, seq);
    if (step !== undefined) {
      scrub = step === steps.length ? "live" : step;
      range.value = String(step);
      void showStep();
    }
    chart?.select(stageId);
    if (stageExecutionId) void showStage(stageExecutionId);
  });

  const renderHead = () => {
    controls.render(run.status, stageIds);
    timeline.setLive(run.status === "running");
    status.textContent = run.status;
    status.setAttribute("data-status", run.status);
    facts.textContent = `${run.pipelineId} · started ${run.createdAt.slice(0, 19).replace("T", " ")} · ${run.tokens.total.totalTokens} tokens${costText(run.tokens.total, run.tokens.unpricedModels)} · ${events.length} events`;
  };
  const renderGrants = () =>
    grants.show([
      ...liveGrants,
      ...(run.status === "suspended"
        ? (run.waiting ?? []).flatMap((w) => (w.kind === "grant" ? [w] : []))
        : []),
    ]);
  const renderAsks = () =>
    asks.show([
      ...liveAsks,
      ...(run.status === "suspended"
        ? (run.waiting ?? []).flatMap((w) => (w.kind === "input" ? [w] : []))
        : []),
    ]);
  const showState = (state: ChartState, lastSeq: number | undefined) => {
    chart?.show(state, lastSeq === undefined ? run.status : undefined);
    chart?.outcomes(outcomesOf(events, lastSeq));
    timeline.upTo(lastSeq);
  };
  const showStep = async () => {
    range.max = String(Math.max(steps.length, 1));
    if (scrub === "live") range.value = range.max;
    const k = scrub === "live" ? steps.length : scrub;
    stepLabel.textContent = steps.length
      ? `${k} of ${steps.length}${scrub === "live" ? " · latest" : ""}`
      : "no steps stored";
    if (k >= 1) fork.at(k, runId);
    if (scrub === "live" && live && live.status === "active")
      return showState(live.state, undefined);
    if (k < 1) return;
    const view = await getJson<StepView>(`${api}/steps/${k}`);
    context.textContent = JSON.stringify(view.context, null, 2);
    showState(view.state, scrub === "live" ? undefined : view.lastSeq);
  };
  range.addEventListener("input", () => {
    scrub = Number(range.value) === steps.length ? "live" : Number(range.value);
    void showStep();
  });
  liveButton.addEventListener("click", () => {
    scrub = "live";
    void showStep();
  });

  const showStage = async (stageExecutionId: string) => {
    shownExecution = stageExecutionId;
    const showing = ++showings;
    const mine = events.filter((e) => e.stageExecutionId === stageExecutionId);
    const tokens = run.tokens.stages.find((t) => t.stageExecutionId === stageExecutionId);
    const transcript = await getJson<
      Array<{
        role: string;
        text?: string;
        tool?: string;
        calls?: Array<{ tool: string; args: unknown }>;
        result?: unknown;
      }>
    >(`${api}/transcripts/${encodeURIComponent(stageExecutionId)}`);
    // A later showing (another stage picked, newer events) draws the panel: not this one.
    if (showing !== showings) return;
    const tools = mine.filter((e) =>
      ["ToolApproved", "ToolDenied", "ToolSucceeded", "ToolFailed"].includes(e.type),
    );
    const stageId = mine.find((e) => e.stageId)?.stageId;
    const description = stageId === undefined ? undefined : descriptions.get(stageId);
    details.replaceChildren(
      h("h2", {}, stageExecutionId),
      ...(description ? [h("p", { class: "description" }, description)] : []),
      h(
        "p",
        { class: "stats" },
        `${mine.filter((e) => e.type === "ModelTurn").length} turns · ${mine.filter((e) => e.type === "StageRetry").length} retries · ${mine.filter((e) => e.type === "CapHit").length} cap hits · `,
        tokens
          ? `${tokens.totalTokens} tokens (${tokens.inputTokens} in, ${tokens.outputTokens} out)${costText(tokens, run.tokens.unpricedModels)}`
          : "no tokens",
      ),
      h("h3", {}, "Tool calls"),
      tools.length
        ? h(
            "ul",
            { class: "tools" },
            ...tools.map((e) =>
              h(
                "li",
                { class: `tool-${e.type}` },
                h("span", { class: "tag" }, e.type.replace("Tool", "")),
                " ",
                summary(e),
              ),
            ),
          )
        : h("p", { class: "hint" }, "none"),
      h("h3", {}, "Transcript"),
      h(
        "ol",
        { class: "transcript" },
        ...transcript.map((m) =>
          h(
            "li",
            { class: `msg msg-${m.role}` },
            h("span", { class: "role" }, m.role),
            h(
              "pre",
              {},
              m.text ||
                (m.calls
                  ? m.calls.map((c) => `${c.tool}(${JSON.stringify(c.args)})`).join("\n")
                  : "") ||
                JSON.stringify(m.result ?? "", null, 1),
            ),
          ),
        ),
        streaming.element,
      ),
    );
    streaming.show(stageExecutionId);
  };

  socket.listen((news: News) => {
    if (news.type === "audit" && news.runId === runId) {
      const fresh = (news.events as AuditEvent[]).filter((e) => e.seq > (events.at(-1)?.seq ?? 0));
      events.push(...fresh);
      timeline.add(fresh);
      streaming.audited(fresh);
      // The open panel's stage did something: its stored transcript is fetched again (and takes
      // the place of the reply that streamed, once its turn is there).
      if (shownExecution && fresh.some((e) => e.stageExecutionId === shownExecution))
        void showStage(shownExecution);
      void refresh();
    } else if (news.type === "live" && (news.root as LiveRoot).runId === runId) {
      live = news.root as LiveRoot;
      if (scrub === "live" && live.status === "active") showState(live.state, undefined);
    } else if (news.type === "grants" && news.runId === runId) {
      liveGrants = news.grants as PendingGrant[];
      renderGrants();
    } else if (news.type === "asks" && news.runId === runId) {
      liveAsks = news.asks as InputRequest[];
      renderAsks();
    } else if (news.type === "replies" && news.runId === runId) {
      streaming.reset(news.replies as StreamingReply[]);
    } else if (news.type === "reply-delta" && news.runId === runId) {
      streaming.add(news.delta as ModelDelta);
    } else if (news.type === "reply-ended" && news.runId === runId) {
      streaming.ended(String(news.stageExecutionId));
    }
  });
  const refresh = async () => {
    const seq = events.at(-1)?.seq ?? 0;
    run = await getJson<RunView>(api);
    steps = await getJson<Step[]>(`${api}/steps`);
    renderHead();
    renderGrants();
    renderAsks();
    await showStep();
    socket.shown(runId, seq);
  };
  socket.watch(runId, () => events.at(-1)?.seq ?? 0);
  renderHead();
  renderGrants();
  renderAsks();
  await showStep();
  socket.shown(runId, events.at(-1)?.seq ?? 0);
}

/** A fork's origin: the run and step it was forked from, and a comparison with that run. */
function forkedFrom(runId: string, events: readonly AuditEvent[]): HTMLElement | undefined {
  const forked = events.find((e) => e.type === "RunForked")?.payload.from as
    | { runId: string; step: number }
    | undefined;
  if (!forked) return undefined;
  const source = encodeURIComponent(forked.runId);
  return h(
    "span",
    { class: "facts", "data-forked-from": forked.runId },
    "forked from ",
    h("a", { href: `/runs/${source}` }, forked.runId),
    ` at step ${forked.step} · `,
    h(
      "a",
      { href: `/compare/${source}/${encodeURIComponent(runId)}`, "data-compare-link": "" },
      "compare",
    ),
  );
}

/** What each stage drawn is for, by stage id, sub-pipelines' stages included. */
function descriptionsOf(node: Chart["root"]): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (current: Chart["root"]): void => {
    if (current.stage && current.description) found.set(current.stage, current.description);
    current.children.forEach(walk);
    if (current.sub) walk(current.sub.root);
  };
  walk(node);
  return found;
}

/** The stages of the run's own pipeline, in the chart's order (a sub-pipeline's are its own). */
function stagesOf(node: Chart["root"]): string[] {
  const own = node.stage && node.type !== "parallel" ? [node.stage] : [];
  return [...new Set([...own, ...node.children.flatMap(stagesOf)])];
}

/** ` · $0.0123`, `+` when some turns had no price; ` · cost unknown (…)` when none had one. */
function costText(count: TokenCount, unpricedModels: readonly string[]): string {
  if (count.costUsd === 0 && count.unpricedTurns > 0)
    return ` · cost unknown (no price for ${unpricedModels.join(", ")})`;
  return ` · ${formatUsd(count.costUsd)}${count.unpricedTurns > 0 ? "+" : ""}`;
}
