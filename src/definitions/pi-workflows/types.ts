import type { Position } from "../diagnostics.js";

/**
 * A pi-workflows definition as loaded from its directory: the
 * directory name is its key, `workflow.yaml` its fields, each phase a Markdown file.
 */
export interface WorkflowDefinition {
  /** The directory name: the workflow's key, and its pipeline id once translated. */
  key: string;
  /** The `workflow.yaml` file. */
  file: string;
  name: string;
  commandName?: string;
  initialMessage?: string;
  /** `user`: started on its own; `workflows`: only ever a subworkflow. */
  show: "user" | "workflows";
  /** Whether `workflow_step loop` may restart this workflow's phases. */
  loopable: boolean;
  phases: PhaseEntry[];
}

export type PhaseEntry = PhaseDefinition | SubworkflowReference;

export interface PhaseDefinition {
  kind: "phase";
  id: string;
  name: string;
  emoji: string;
  /** A phase without one allows every tool of the host. */
  tools?: { whitelist: string[] } | { blacklist: string[] };
  availableProfiles: string[];
  /** The trimmed body. */
  instructions: string;
  file: string;
}

export interface SubworkflowReference {
  kind: "subworkflow";
  key: string;
  /** Where the reference sits in `workflow.yaml`. */
  at: Position;
}

/** Every workflow of a workflows root that loaded, by key. */
export type WorkflowSet = ReadonlyMap<string, WorkflowDefinition>;

export const WORKFLOW_FILE = "workflow.yaml";
