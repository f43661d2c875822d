/**
 * The Journal and TranscriptStore interfaces carry no run id, so the store reads it from the
 * ids the runtime builds: a stage execution id is `<runId>/<stageId>/<visit>…` and a journal key
 * is `<kind>:<runId>/…` (see `modelCallKey`, `toolCallKey`). That is sound because a run id
 * may not contain `/` (`createRun` refuses one); a row attributed to a run that does not exist
 * is refused by the foreign key.
 */
export const isValidRunId = (runId: string): boolean => runId !== "" && !runId.includes("/");

export const runIdOfExecution = (stageExecutionId: string): string =>
  beforeSlash(stageExecutionId, 0);

export const runIdOfJournalKey = (key: string): string => beforeSlash(key, key.indexOf(":") + 1);

/** The text from `start` to the first `/` after it (to its end when there is none). */
function beforeSlash(text: string, start: number): string {
  const slash = text.indexOf("/", start);
  return text.slice(start, slash < 0 ? undefined : slash);
}
