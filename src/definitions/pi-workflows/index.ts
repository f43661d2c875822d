export { isWorkflowDirectory } from "./detect.js";
export { loadWorkflowPipeline, loadWorkflowRoot } from "./load.js";
export { CANCEL_PENDING, LOOP_REFUSED, STEP_TOOL } from "./step-tool.js";
export type { WorkflowDefinition } from "./types.js";
