/**
 * Every error code stagechart reports, with what it means for the person who meets it: what
 * happened and what to do. A code is `<class>/<name>`; the class says how the failure is
 * handled (a transient one may be retried, a terminal one is not). Listing them in one place
 * makes a misspelt code a type error and lets the documentation be generated from this table.
 */
export const ERROR_CLASSES = [
  "Validation",
  "ProviderTransient",
  "ProviderCapability",
  "ToolTransient",
  "ToolTerminal",
  "Session",
  "Cancellation",
  "ExtensionHost",
] as const;

export type ErrorClass = (typeof ERROR_CLASSES)[number];

const MEANINGS = {
  // Definitions: stage files
  "Validation/StageFileUnreadable":
    "A stage file could not be read; check that the path exists and is readable.",
  "Validation/StageFileNotMarkdown":
    "A stage file is not a Markdown file; stages are written as .md files with YAML frontmatter.",
  "Validation/StageFileBinary":
    "A stage file holds binary data, not text; point the pipeline at the stage's Markdown file.",
  "Validation/StageFileTooLarge":
    "A stage file is larger than stagechart reads; shorten it or move long material into files the stage's tools read.",
  "Validation/StageFileEmpty": "A stage file is empty; give it YAML frontmatter and a prompt body.",
  "Validation/StageFrontmatterMissing":
    "A stage file has no YAML frontmatter; start it with a --- block that names at least its id.",
  "Validation/StageYamlInvalid":
    "A stage file's frontmatter is not valid YAML; fix the syntax at the position shown.",
  "Validation/StageDefinitionInvalid":
    "A stage's frontmatter does not match the stage schema; fix the field named in the message.",
  "Validation/StageFieldUnknown":
    "A stage's frontmatter has a field stagechart does not know; remove it or fix its spelling (the message suggests the closest name).",
  "Validation/StageMissingField":
    "A stage's frontmatter lacks a required field; add the field named in the message.",
  "Validation/StageIdInvalid":
    "A stage id is not kebab-case; write it as lowercase words joined by single hyphens.",
  "Validation/StageTurnCapTooLow": "A stage's turnCap is below the least allowed; raise it.",
  "Validation/StageCompletionSchemaInvalid":
    "A stage's completion schema is not a valid JSON Schema; fix the schema.",
  "Validation/StageInputsSchemaInvalid":
    "A stage's inputs schema is not a valid JSON Schema; fix the schema.",
  "Validation/CompletionToolCollision":
    "A stage's completion tool has the name of a registered tool; rename the completion tool.",
  "Validation/TemplateForbidden":
    "A stage prompt has a placeholder that is not allowed (a conditional, loop, expression or environment variable); use only {{ctx.<path>}} and {{stage.<field>}}.",
  "Validation/TemplateSyntax":
    "A stage prompt's template does not parse; fix the template syntax at the position shown.",
  "Validation/StageBodyEmpty":
    "A stage has no prompt body after its frontmatter; write what the model should do.",
  "Validation/StageCtxUnresolved":
    "A stage prompt's placeholder has no value in the run's ctx; define the field or fix the name.",
  "Validation/StageIdMismatch":
    "A stage file's id differs from the id the pipeline gives it; make the two the same.",
  "Validation/StageJoinDangling":
    "A parallel group's join names no stage of the pipeline; a join is a stage id or done.",
  "Validation/MapOverUnknown":
    "A map group's over path names a field the fan-out stage's completion schema (or the pipeline's context) does not declare; fix the path.",
  "Validation/MapPlanInvalid":
    "A map group cannot be planned as written (its stage, its as name or its policy); fix the group named in the message.",
  "Validation/MapOverNotList":
    "At run time a map group's over path did not hold a list; make the fan-out stage produce a list there.",
  "Validation/MapTooManyItems":
    "A map group's list has more items than its maxItems allows (1,000 unless set); raise maxItems or split the list.",
  "Validation/StageUnreachable":
    "A stage can never be reached from the pipeline's entry; connect it or remove it.",
  "Validation/StageNoExit":
    "No path from a stage leads to done or fail, so a run there ends only when no rule matches; add a transition that leaves it.",
  "Validation/StageOutputFieldUnknown":
    "A stage's output lists a field its completion schema does not have; fix the field name.",
  "Validation/UnknownTool":
    "A stage allows a tool the host does not have; register the tool or remove it from the stage.",
  "Validation/GuardUnknown":
    "A rule names a guard that is not defined; define the guard or fix its name.",
  "Validation/CodeReferenceInvalid":
    "A code reference is not of the form path#export; fix the reference.",
  "Validation/CodeReferenceOutsideRoot":
    "A code reference points outside the pipeline's directory; keep referenced modules beside or below the pipeline file.",
  "Validation/CodeModuleUnloadable":
    "A code module could not be loaded; fix the module's syntax or imports.",
  "Validation/CodeExportMissing":
    "A code module does not export the name a reference asks for; export it or fix the name.",
  "Validation/CodeExportNotFunction":
    "A code reference names an export that is not a function; point it at a function.",

  // Definitions: scripts of scripted models
  "Validation/ScriptFileTooLarge":
    "A model script file is larger than stagechart reads; split or shorten it.",
  "Validation/ScriptInvalid":
    "A model script does not match the script schema; fix the entry named in the message.",
  "Validation/ScriptYamlInvalid":
    "A model script is not valid YAML; fix the syntax at the position shown.",
  "Validation/ScriptStageUnknown":
    "A model script answers a stage the pipeline does not have; fix or remove that entry.",
  "Validation/ScriptStageMissing":
    "A model script has no answer for a stage the run reached; add answers for that stage.",

  // Definitions: pipeline files
  "Validation/PipelineFileTooLarge":
    "A pipeline file is larger than stagechart reads; split it into smaller pipelines.",
  "Validation/PipelineFileNotYaml":
    "A pipeline file is not a YAML file; pipelines are written as .yaml files.",
  "Validation/PipelineYamlInvalid":
    "A pipeline file is not valid YAML; fix the syntax at the position shown.",
  "Validation/PipelineDefinitionInvalid":
    "A pipeline does not match the pipeline schema; fix the field named in the message.",
  "Validation/PipelineMissingField":
    "A pipeline lacks a required field; add the field named in the message.",
  "Validation/PipelineIdInvalid":
    "A pipeline id is not kebab-case; write it as lowercase words joined by single hyphens.",
  "Validation/PipelineContextInvalid":
    "A pipeline's context schema does not compile, or the run's context does not match it; fix the schema or the values given.",
  "Validation/PipelineSchemaUnconvertible":
    "A TypeScript pipeline gives a zod schema that has no JSON Schema form (a function, a transform, a custom check); use types JSON Schema can express.",
  "Validation/PipelineEntryUnknown":
    "A pipeline's entry names a stage it does not have; point the entry at one of its stages.",
  "Validation/PipelineTargetUnknown":
    "A transition goes to a stage the pipeline does not have; fix the target's name.",
  "Validation/PipelineStageInvalid":
    "A stage entry of the pipeline is malformed; fix the entry named in the message.",
  "Validation/PipelineCycle":
    "A pipeline contains itself, directly or through pipelines it includes; break the cycle.",
  "Validation/PipelineUnboundedLoop":
    "A loop of unconditional transitions repeats forever; give one of them a condition with a way out.",
  "Validation/WaitTimeoutInvalid":
    "A wait's timeout (an ask stage's, or the grants block's) is not { after, fallback }: after a number of seconds above 0 or a duration such as 10m, fallback fail, deny (grants) or { answer } (an ask) with an answer the ask's schema accepts; fix the timeout.",
  "Validation/PipelineGrantRuleInvalid":
    "A pipeline's grant rule is not of the form Tool or Tool(pattern); fix the rule.",
  "Validation/PipelineNotFound":
    "No pipeline has the given name or path; check the name or list the pipelines.",
  "Validation/PipelineInvalid":
    "A run's stored pipeline cannot be drawn; the pipeline files it came from may have changed or be damaged.",
  "Validation/PipelinesDirNotFound":
    "The pipelines directory does not exist; create it or pass the right directory.",
  "Validation/NoPipelines":
    "The pipelines directory holds no pipeline file; add a YAML file with an id.",

  // Definitions: workflows
  "Validation/WorkflowFileTooLarge": "A workflow file is larger than stagechart reads; split it.",
  "Validation/WorkflowInvalid":
    "A workflow does not match the workflow schema; fix the field named in the message.",
  "Validation/WorkflowPhaseInvalid":
    "A workflow phase is malformed; fix the phase named in the message.",
  "Validation/WorkflowPathUnsafe":
    "A workflow refers to a path outside its directory; keep the files it names beside it.",
  "Validation/WorkflowCycle": "A workflow's subworkflows form a cycle; break the cycle.",
  "Validation/WorkflowReferenceBroken":
    "A workflow refers to a file or phase that does not exist; fix the reference.",
  "Validation/WorkflowNotRunnable":
    "A workflow that runs only as a subworkflow was run on its own; run a workflow that uses it.",
  "Validation/WorkflowCommandDuplicate":
    "Two workflows declare the same command name, and only one of them gets it; rename one.",

  // Definitions stored for workers
  "Validation/DefinitionNotBundlable":
    "A pipeline cannot be stored for a worker to run; follow the message to make its files storable.",
  "Validation/DefinitionInvalid":
    "A stored definition does not load on this machine; queue the run again from valid pipeline files.",
  "Validation/DefinitionPathUnsafe":
    "A stored definition names a file path that would escape its directory; it is refused, queue the run again from trusted files.",
  "Validation/DefinitionPathClash":
    "A stored definition names a path that clashes with another of its files; it is refused, queue the run again.",

  // Running: a run's input
  "Validation/RunContextInvalid":
    "The run's context was given in a contradictory way (for example the task twice); give each value once.",
  "Validation/RunIdInvalid": "A run id is empty or contains a slash; choose another id.",
  "Validation/RootInvalid":
    "The host's root is not an existing directory; pass a directory for tools to work in.",
  "Validation/HostLimitInvalid":
    "A host limit such as maxParallelStages is not a whole number of at least 1; fix the setting.",
  "Validation/InputInvalid":
    "An answer to an ask stage does not match its schema; answer again with the fields it asks for.",
  "Validation/OverrideReasonMissing":
    "An override was given without a reason; overrides are audited, so give one.",
  "Validation/ReopenReasonMissing":
    "Reopening a finished run needs a reason, which is audited; give one.",
  "Validation/RedoStageMissing": "A redo did not name the stage to run again; name the stage.",
  "Validation/ForkStepUnknown":
    "A fork names a step the run does not have; pick one of the run's committed steps.",
  "Validation/PruneCriteriaInvalid":
    "A prune was given no runs to select, or a value it cannot read; give --ended-before an ISO 8601 date or an age (30d, 12h), --keep a whole number of runs, --batch-size a whole number from 1 to 10000.",

  // Running: stages and their results
  "Validation/StageInputsInvalid":
    "An upstream stage's result does not match this stage's inputs schema; fix the upstream stage's output or the schema.",
  "Validation/StageFailed":
    "A stage ended by failing; read its reason, fix the cause and redo or resume the run.",
  "Validation/StageAssertFailed":
    "A stage's assert rejected its result; read the reason and fix the stage or its prompt.",
  "Validation/StageRetriesExhausted":
    "A stage used all its attempts without a result its asserts accept; raise the attempts or fix the stage.",
  "Validation/StageGateRefused":
    "A stage's gate was refused, so the stage did not run; approve the gate to go on.",
  "Validation/PipelineFailedByRule":
    "A stage's rules sent the run to fail; this is the pipeline's own decision, read the stage's result.",
  "Validation/PipelineNoRuleMatched":
    "No transition rule of a stage matched its result; add a rule (or a default) for that result.",
  "Validation/CompletionNotAlone":
    "The model called the completion tool together with other calls; it must call it alone, and is told to try again.",
  "Validation/CompletionRefused":
    "The stage refused the model's completion; the model is told the reason and may try again.",
  "Validation/CompletionSchemaMismatch":
    "The model's completion payload does not match the completion schema; the model is told to fix it and try again.",

  // Running: grants
  "Validation/GrantNotFound":
    "A tool call had no grant for its proposal; approve the call before it runs.",
  "Validation/GrantAlreadyConsumed":
    "A grant was used a second time; grants are one-shot, so approve the call again.",
  "Validation/GrantMismatch":
    "A grant covers different arguments from the call that used it; approve the call with its actual arguments.",

  // Models
  "Validation/ModelSpecInvalid":
    "A model spec is incomplete; write it in one of the forms the message lists.",
  "Validation/ModelSpecUnsupported":
    "A model spec names an unknown provider or form; use one of the forms the message lists.",
  "Validation/ModelSpecMissing":
    "No model was given and no script sits beside the pipeline; pass --model.",
  "Validation/ModelKeyMissing":
    "The chosen model needs an API key in an environment variable that is not set; set it.",
  "Validation/PriceFileInvalid":
    "A price file cannot be read or does not map model names to {input, output, cachedInput?} prices in US dollars per million tokens; fix the entry named.",
  "Validation/TracingInvalid":
    "The OpenTelemetry variables ask for an exporter or protocol stagechart cannot send traces with; use OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json.",
  "Validation/CassetteInvalid": "A cassette file is not a valid recording; record it again.",
  "Validation/CassetteCallUnplaced":
    "A model call reached the cassette without saying where in the run it belongs; call models through stagechart's model turns.",
  "Validation/ReplayMismatch":
    "A replayed run asked the model something the cassette did not record; record the cassette again.",

  // Testing
  "Validation/FixturesFileInvalid":
    "A fixtures file for path tests is not valid JSON of stage answers; fix the file.",
  "Validation/PathsFileInvalid":
    "A paths file is not the output of stagechart paths --json; regenerate it.",
  "Validation/MapNotModelled":
    "The paths and test commands cannot produce the list of this map group (a sub-pipeline fan-out's, or a parsed list after a code, command or ask stage); test such a pipeline by running it with a scripted model.",
  "Validation/PathLimitExceeded":
    "A pipeline's model has more states within the visits allowed than paths will walk; lower --max-visits.",

  // Tools configuration
  "Validation/McpConfigInvalid":
    "An MCP server configuration is malformed; fix the --mcp option or the config file.",
  "Validation/McpServerNameInvalid":
    "An MCP server name is duplicated or not 1 to 32 letters, digits, _ or -; give each server a distinct name of that form.",

  // Inspect server and CLI input
  "Validation/InspectTokenMissing":
    "The inspect server was asked to listen beyond loopback without an access token; give it a token.",
  "Validation/InspectForbidden":
    "The inspect server refused a request from another host, another site or without the access token; open the page it printed.",
  "Validation/RouteNotFound":
    "The inspect server has no page or API route at that address; check the URL.",
  "Validation/ApiTokenMissing":
    "A request to the HTTP API came without the server's access token (or with another); send it as Authorization: Bearer <token>.",
  "Validation/RequestBodyInvalid":
    "A request's body is not JSON, is too large, or does not match the route's schema (see /api/v1/openapi.json); fix the fields the error names.",
  "Validation/IdempotencyKeyInvalid":
    "An Idempotency-Key header is empty or longer than 200 characters; send a key of 1 to 200 printable characters.",
  "Validation/ModelSpecOutsideServed":
    "A run started over HTTP named a scripted or replay model file outside the served directory; name a file inside it.",
  "Validation/WebhookConfigInvalid":
    "A webhook URL or the webhook config file is malformed (URLs must be http or https; the file is {urls: [...], secretEnv?}); fix it.",
  "Validation/ComparePipelinesDiffer":
    "Two runs of different pipelines were asked to be compared; compare two runs of the same pipeline.",
  "Validation/PortInvalid": "A port is not a number from 0 to 65535; pass a valid port.",

  // Provider
  "ProviderTransient/ModelCallFailed":
    "A model call failed in a way that may pass; the stage retries it within its attempts.",
  "ProviderTransient/ProviderUnavailable":
    "The model provider could not be reached or is overloaded; wait and resume the run.",
  "ProviderTransient/ProviderError":
    "The model provider answered with a server error or a garbled reply; wait and resume the run.",
  "ProviderTransient/ModelTimeout":
    "A model call took longer than its timeout; resume the run or raise the timeout.",
  "ProviderTransient/IdleTimeout":
    "A model stopped sending its reply midway; resume the run or raise the idle timeout.",
  "ProviderCapability/MissingToolCalling":
    "The chosen model cannot call tools, which stages need to finish; pick a model with tool calling.",
  "ToolTransient/ToolTimeout":
    "A tool did not finish within its time limit; the model may try again, or raise the limit.",
  "ToolTransient/McpServerUnavailable":
    "An MCP server stopped answering; the call may be tried again once the server is back.",
  "ToolTerminal/UnknownTool":
    "The model called a tool that does not exist; it is told so and may pick another.",
  "ToolTerminal/NotOnAllowlist":
    "A tool call was denied because it is not on the allowlist; add it to the allowlist to permit it.",
  "ToolTerminal/NoInteractor":
    "A tool call needed approval but the run is headless; allow the call up front or run with an interactor.",
  "ToolTerminal/GrantDenied":
    "The user denied a tool call; the model is told and may take another way.",
  "ToolTerminal/GuardDenied":
    "A guard rule denied a tool call; the model is told which rule and may take another way.",
  "ToolTerminal/InvalidToolInput":
    "A tool was called with arguments that do not fit its input; the model is told what is wrong.",
  "ToolTerminal/InvalidToolSchema":
    "A tool's input schema is not a valid JSON Schema; fix the tool's definition.",
  "ToolTerminal/ToolCrashed":
    "A tool threw instead of returning an outcome; fix the tool so it reports failures as values.",
  "ToolTerminal/FileNotFound": "A file a tool was asked to use does not exist; check the path.",
  "ToolTerminal/IsDirectory": "A file tool was pointed at a directory; give it a file's path.",
  "ToolTerminal/NotADirectory": "A path has a file where a directory should be; fix the path.",
  "ToolTerminal/NotARegularFile":
    "A file tool was pointed at something other than a regular file (a link, device or socket); only regular files are read or written.",
  "ToolTerminal/PermissionDenied":
    "A file tool was not permitted to open a path; change the file's permissions or pick another path.",
  "ToolTerminal/FileSystemError":
    "A file could not be accessed for another reason the message gives; fix the cause on disk.",
  "ToolTerminal/SandboxEscape":
    "A path was swapped for a symbolic link after it was checked and is not followed; nothing outside the root is touched.",
  "ToolTerminal/FileTooLarge":
    "A file is larger than the file tools read; read a smaller file or a part of it by other means.",
  "ToolTerminal/BinaryFile": "A file holds binary data, which the file tools do not read as text.",
  "ToolTerminal/EditNoMatch":
    "The text an edit should replace does not occur in the file; read the file again and retry with its actual text.",
  "ToolTerminal/EditAmbiguous":
    "The text an edit should replace occurs several times; add surrounding lines to make it unique, or replace all.",
  "ToolTerminal/SandboxUnavailable":
    "The shell tool's sandbox cannot run on this machine; install the sandbox or run without confinement deliberately.",
  "ToolTerminal/SpawnFailed":
    "The shell tool could not start its command; check that the shell and the command exist.",
  "ToolTerminal/McpToolError":
    "An MCP tool reported that its call failed; the model is told the tool's message.",
  "ToolTerminal/McpProtocolError":
    "An MCP server refused a call as malformed; check the server's tool and its arguments.",

  // Session: runs and their stores
  "Session/NoStore":
    "A run was to be resumed but no store was given; pass the store the run was saved in.",
  "Session/RunNotFound": "No run has that id in the store; check the id and the store path.",
  "Session/RunExists": "A run with that id already exists; pick another id.",
  "Session/IdempotencyKeyReused":
    "A start request reused an Idempotency-Key with a different body; send a new key for a different run, or the same body to get the same run.",
  "Session/RunFinished":
    "The run already ended and cannot be resumed; reopen it or fork it to go on.",
  "Session/RunLocked":
    "Another process is running this run; wait for it, or for its lease to expire.",
  "Session/RunNotLive":
    "The run has no live owner to take a control request; resume the run to apply it.",
  "Session/RunNotQueued": "The run is not queued, so a worker cannot take it; check its status.",
  "Session/NoSnapshot":
    "The store holds no snapshot of the run to resume from (a run that never took a step starts from the beginning instead); check the run id and store.",
  "Session/SnapshotCorrupt":
    "A run's stored snapshot is damaged and cannot be restored; fork the run from an earlier step.",
  "Session/DefinitionDrift":
    "The pipeline changed since the run was saved; restore the old definition or resume with --force.",
  "Session/IllegalTransition":
    "The run is not in a state that allows this request (for example a redo of a finished stage); read the message for what it allows.",
  "Session/NoPendingInput":
    "The run waits for no answer from that stage; check which stages it waits for.",
  "Session/InputAmbiguous":
    "The run waits for several answers; say which stage execution the answer is for.",
  "Session/NoPendingGrant":
    "The run has no grant request waiting with that id; check which proposals it waits for.",
  "Session/ControlTimeout":
    "The run's owner did not take a control request in time, and it was withdrawn; try again or resume the run.",
  "Session/ControlExpired":
    "Nobody took a control request before it expired; send it again while the run is live.",
  "Session/ControlTaken":
    "The run's owner took a control request but stopped before storing its outcome; it is applied when the run is resumed.",
  "Session/LeaseLost":
    "This process lost its hold on the run to another owner; its last step was not stored, let the other owner go on.",
  "Session/ForkUnavailable":
    "The step to fork from was stored before the store kept what a fork copies, or its snapshot was pruned (prune --history-only); fork from a later step.",
  "Session/ForkNotServed":
    "This inspect server does not start runs (a run's own --inspect server), so it cannot fork one; open the run under stagechart inspect, or use stagechart fork.",
  "Session/StepNotFound": "The run has no step with that number; pick one of its steps.",
  "Session/ActorNotFound":
    "The inspect server has no live actor with that id; it may have finished.",
  "Session/StoreUnavailable":
    "The run's store file or database went away or refused the run while it was used; check the store and resume the run.",
  "Session/StoreCorrupt":
    "The store holds data stagechart cannot read back; restore the store from a backup or fork the run from an intact step.",
  "Session/StoreDamaged":
    "The store lost committed steps (its write-ahead log was deleted or damaged after a crash); resume the run from what is left.",
  "Session/StoreTooNew":
    "The store was written by a newer stagechart; upgrade stagechart to read it.",
  "Session/StoreConflict":
    "The database aborted a call that conflicted with another and stored nothing of it; try again.",
  "Session/AuditRunMismatch":
    "An audit event was committed to a run other than its own; this is a bug in the caller of the store.",
  "Session/EntryRunMismatch":
    "A journal or transcript entry was committed to a run its key does not name; this is a bug in the caller of the store.",
  "Session/DefinitionNotFound":
    "The store has no stored definition for the run; queue the run again from this store.",
  "Session/DefinitionMismatch":
    "A stored definition loads into a different definition from the one it was stored as; queue the run again.",
  "Session/DefinitionCacheUnavailable":
    "The machine cannot write stored definitions to its cache directory; make the directory writable.",
  "Session/PrepareFailed":
    "A worker could not prepare a queued run for an unforeseen reason the message gives; fix it and queue the run again.",

  // Cancellation
  "Cancellation/BudgetExceeded":
    "A model call would have started past a budget the pipeline sets (tokens, cost or wall time), so it was not made and the stage failed; raise the budget in the pipeline's budget block, or route the failed stage on error.code.",
  "Cancellation/WaitTimedOut":
    "Nobody answered an ask stage or a grant request before the deadline its timeout sets, and the timeout says to fail the stage; route the failed stage on error.code, answer sooner, or give the timeout a longer after or another fallback.",
  "Cancellation/RunCancelled": "The run was cancelled; resume or fork it to go on.",
  "Cancellation/StageCancelled":
    "A stage or tool was cancelled before it finished, because its run was cancelled or stopped.",
  "Cancellation/StageStopped":
    "A stage execution ended while it waited for a parallel stage slot; nothing of it ran.",

  // Extension host: the parts that host stages, tools and parallel groups
  "ExtensionHost/WebhookFailed":
    "A webhook could not be delivered (the receiver was unreachable or did not answer 2xx) after every retry; the run went on regardless. Check the receiver.",
  "ExtensionHost/TraceExportFailed":
    "The spans of a run could not be sent to the OpenTelemetry endpoint (it did not answer, or refused them); the run itself is unaffected. Check OTEL_EXPORTER_OTLP_ENDPOINT and that the collector is up.",
  "ExtensionHost/LifecycleFailure":
    "A hook or callback given to the host threw; fix the hook so it does not throw.",
  "ExtensionHost/ProviderRejected":
    "The model provider refused the request (a bad key, model name or request); fix the model settings.",
  "ExtensionHost/McpServerStartFailed":
    "An MCP server did not start or could not be reached; check its command (and read its output in the message), or its URL and headers.",
  "ExtensionHost/InvalidParallelPlan":
    "A parallel group cannot be planned as written; fix the group named in the message.",
  "ExtensionHost/ParallelSiblingFailure":
    "A stage of a fail-fast parallel group failed, so the group failed; fix the failing stage.",
  "ExtensionHost/ParallelPolicyUnmet":
    "Too many stages of a parallel group failed for its policy to be met; fix the failing stages.",
  "ExtensionHost/InspectFailed":
    "The inspect server could not start; read the message (often the port is in use) and try again.",
  "ExtensionHost/VisualizerNotBuilt": "The visualizer's page is not built; run npm run build.",
} as const satisfies Record<`${ErrorClass}/${string}`, string>;

/** Every code stagechart reports; a code outside this list does not typecheck. */
export type ErrorCode = keyof typeof MEANINGS;

/** The class of a code: the part before its slash. */
export type ClassOf<C extends ErrorCode> = C extends `${infer K extends ErrorClass}/${string}`
  ? K
  : never;

export interface ErrorCodeInfo<C extends ErrorCode = ErrorCode> {
  class: ClassOf<C>;
  meaning: string;
}

export const classOf = <C extends ErrorCode>(code: C): ClassOf<C> =>
  code.slice(0, code.indexOf("/")) as ClassOf<C>;

/** Each code with its class and what it means for the person who meets it. */
export const ERROR_CODES: { readonly [C in ErrorCode]: ErrorCodeInfo<C> } = Object.fromEntries(
  Object.entries(MEANINGS).map(([code, meaning]) => [
    code,
    { class: classOf(code as ErrorCode), meaning },
  ]),
) as { readonly [C in ErrorCode]: ErrorCodeInfo<C> };

export const isErrorCode = (value: unknown): value is ErrorCode =>
  typeof value === "string" && Object.hasOwn(MEANINGS, value);
