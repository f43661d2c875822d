import { classOf, type ErrorClass, type ErrorCode } from "./error-codes.js";

export {
  ERROR_CLASSES,
  ERROR_CODES,
  type ErrorClass,
  type ErrorCode,
  type ErrorCodeInfo,
  isErrorCode,
} from "./error-codes.js";

/**
 * Errors are values: `{class, code, message, context}`, so a failure can be stored, audited,
 * shown to a model and matched on without parsing text. The code is `<class>/<name>`, one of
 * `ERROR_CODES`; what a model may see of an error is `toModelView()`, never the stack.
 */
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
    this.class = classOf(code);
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
