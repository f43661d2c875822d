/**
 * The Journal and TranscriptStore interfaces carry no run id, so the store reads it from the
 * ids the runtime builds: a stage execution id is `<runId>/<stageId>/<visit>…` and a journal key
 * is `<kind>:<runId>/…` (see `modelCallKey`, `toolCallKey`). That is sound because a run id
 * may not contain `/` (`createRun` refuses one); a row attributed to a run that does not exist
 * is refused by the foreign key.
 */
export const isValidRunId = (runId: string): boolean => runId !== "" && !runId.includes("/");

export const runIdOfExecution = (stageExecutionId: string): string =>
  beforeFirstSlash(stageExecutionId);

export const runIdOfJournalKey = (key: string): string =>
  beforeFirstSlash(key.slice(key.indexOf(":") + 1));

const beforeFirstSlash = (text: string): string => text.split("/", 1)[0] ?? text;
