/**
 * Errors are values: `{class, code, message, context}` (DESIGN.md §8). The code is
 * `<class>/<name>`; what a model may see of an error is `toModelView()`, never the stack.
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
export type ErrorCode = `${ErrorClass}/${string}`;

export class StagechartError extends Error {
  override readonly name = "StagechartError";
  readonly class: ErrorClass;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.class = code.slice(0, code.indexOf("/")) as ErrorClass;
  }

  /** What a model (or a JSON log) may see of an error: no stack, no cause. */
  toModelView(): ErrorView {
    return { class: this.class, code: this.code, message: this.message, context: this.context };
  }

  toJSON(): ErrorView {
    return this.toModelView();
  }
}

export interface ErrorView {
  class: ErrorClass;
  code: ErrorCode;
  message: string;
  context: Record<string, unknown>;
}

export type Result<T, E = StagechartError> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
export const err = <E>(error: E): { ok: false; error: E } => ({ ok: false, error });

export const isStagechartError = (value: unknown): value is StagechartError =>
  value instanceof StagechartError;

/** Any thrown value as a StagechartError; unknown failures become `fallback`. */
export function toStagechartError(value: unknown, fallback: ErrorCode): StagechartError {
  if (value instanceof StagechartError) return value;
  const message = value instanceof Error ? value.message : String(value);
  return new StagechartError(fallback, message, {}, { cause: value });
}
