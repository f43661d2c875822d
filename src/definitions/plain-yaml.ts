import { type EventType, FAILSAFE_SCHEMA, load, type State, Type } from "js-yaml";

/**
 * A fast read of plain YAML, for the happy path of `parseYamlSource`: js-yaml parses the bundled
 * definitions about six times faster than the `yaml` package's Document API, which keeps every
 * node's position. It answers only when its data is certainly the data the `yaml` package would
 * give (YAML 1.2 core schema); for anything else — a syntax error, a duplicate key, a tag, a
 * directive, a key that is a collection or null, an alias in its own anchor, the cases MAY_DIFFER
 * lists — it answers undefined and the caller parses with `yaml`, which reports problems with
 * their positions.
 */
export function readPlainYaml(text: string): { data: unknown } | undefined {
  if (MAY_DIFFER.test(text)) return undefined;
  let data: unknown;
  try {
    data = load(text, { schema: CORE_1_2, listener: refuseWhatMayDiffer(text) });
  } catch {
    return undefined;
  }
  // js-yaml reads an empty document (or one of comments only) as undefined, `yaml` as null.
  data ??= null;
  return keysAgree(data) ? { data } : undefined;
}

/**
 * Text where js-yaml and `yaml` may read different data or only `yaml` sees an error: a tab in a
 * line's indentation, a directive (`%YAML 1.1` switches `yaml` to YAML 1.1's types), text on a
 * document marker's line (`---a`, `--- a: 1`), a tag (`!…`), an explicit key (`? `), a flow
 * collection or an alias used as a key (`[a]: b`, `*a: b`), a byte order mark (js-yaml drops it before its positions are
 * counted), a carriage return that does not end a line (`yaml` 2 does not break a line there),
 * an anchor on a flow collection without a space (`&x[b]`) or two anchors on a node, a `\U`
 * escape (js-yaml accepts code points past U+10FFFF), an empty sequence entry or one holding
 * an empty entry (`-` alone, `- -`), a block scalar's explicit indentation (`|2`, `>-1`), and a
 * line longer than a key may be (1,024 characters, `yaml`'s limit). Found in quoted text too,
 * which then only takes the slower path. Each alternative is linear in the line's length.
 */
const MAY_DIFFER = new RegExp(
  [
    /^ *\t/,
    /^%/,
    /^(?:---|\.\.\.)(?:\S|[ \t]+[^#\s])/,
    /(?:^|[\s,[\]{}])(?:!|\?(?:\s|$))/,
    /[\]}][ \t]*:/,
    /(?:^|[\s,[{])\*[^\s,[\]{}]*[ \t]*:(?:[ \t]|$)/,
    /\uFEFF/,
    /\r(?!\n)/,
    /&[^\s[\]{},]*[[{]/,
    /&\S+(?:\s|#.*)*&/,
    /\\U/,
    /^[ \t]*-[ \t]*(?:#.*)?$/,
    /-[ \t]+-[ \t]*(?:#.*)?$/,
    /[|>](?:[-+]?[1-9]|[1-9][-+]?)/,
    /^.{1025}/,
  ]
    .map((pattern) => pattern.source)
    .join("|"),
  "m",
);

/** What js-yaml's listener is given (its types leave out `anchor`). */
interface LoaderState {
  kind: string | null;
  anchor: string | null;
  position: number;
}

/**
 * `yaml` refuses an anchor aliased 100 times or more (its `maxAliasCount`, which yaml-positions.ts
 * sets): a document with fewer aliases than this in all is certainly below that.
 */
const FEW_ALIASES = 50;

/**
 * Refuses what js-yaml reads other than `yaml`: a flow node (quoted or plain scalar, `[…]`, `{…}`)
 * over several lines, since js-yaml does not check how its lines are indented; a comment right
 * after a quote or bracket (`"a"#c`); an anchor before a key on its line (js-yaml reads
 * `a: &x b: c` as a mapping whose first key is anchored, `yaml` refuses it); an anchor holding
 * an alias (`yaml` reports a node that contains its own alias, and counts nested aliases against
 * its limit) or FEW_ALIASES aliases or more, which are left to `yaml` to count and report.
 */
function refuseWhatMayDiffer(text: string) {
  // Where each node being read starts in the text, and how many aliases were read before it.
  const starts: number[] = [];
  const aliasesBefore: number[] = [];
  let aliases = 0;
  return (event: EventType, loaderState: State): void => {
    const state = loaderState as unknown as LoaderState;
    if (event === "open") {
      starts.push(state.position);
      aliasesBefore.push(aliases);
      return;
    }
    const start = starts.pop() ?? 0;
    const before = aliasesBefore.pop() ?? 0;
    let first = start;
    let anchorGap: string | undefined;
    // Most nodes start at their content: space, a comment or an anchor first is looked past.
    if (BEFORE_CONTENT.test(text[start] ?? "")) {
      NODE_START.lastIndex = start;
      anchorGap = NODE_START.exec(text)?.[1];
      first = NODE_START.lastIndex;
    }
    const opener = text[first] ?? "";
    if (state.kind === null && opener === "*" && ++aliases >= FEW_ALIASES) {
      throw new Error("too many aliases");
    }
    if (state.anchor !== null && aliases > before) throw new Error("an alias in an anchor");
    if (state.kind === null) return;
    const flowCollection = opener === "[" || opener === "{";
    if (flowCollection && isFlowMappingKey(text, start, starts.at(-1))) {
      throw new Error("a flow collection as a key");
    }
    if (state.kind === "mapping" && anchorGap !== undefined && !anchorGap.includes("\n")) {
      if (!flowCollection) throw new Error("an anchor before a key on its line");
    }
    const flow = state.kind === "scalar" ? opener !== "|" && opener !== ">" : flowCollection;
    if (flow && overLines(text, first, state.position)) {
      throw new Error("a flow node over several lines");
    }
    const closed = flowCollection || opener === '"' || opener === "'";
    if (closed && text[state.position] === "#") throw new Error("a comment too close");
  };
}

/** A character a node's text may start with before its content: space, a comment, an anchor. */
const BEFORE_CONTENT = /[\s#&]/;

/** Whether the text from `first` to `end`, less the space that ends it, holds a line break. */
function overLines(text: string, first: number, end: number): boolean {
  const lineBreak = text.indexOf("\n", first);
  return lineBreak !== -1 && lineBreak < end && text.slice(lineBreak, end).trim() !== "";
}

/** Space and comments before a node, then its anchor and what follows it up to its content. */
const NODE_START = /(?:\s|#.*)*(?:&\S*((?:\s|#.*)*))?/y;

/** Where the content of the node whose text starts at `start` begins (after space, comments, anchor). */
function contentStart(text: string, start: number): number {
  NODE_START.lastIndex = start;
  NODE_START.exec(text);
  return NODE_START.lastIndex;
}

/**
 * Whether the node whose text (its anchor included) starts at `start` is a key of the flow
 * mapping around it (`{` or `,` before it, as in `{ [a] }`, `{ &x [a]: 1 }` or `{ a: 1, [b]: 2 }`):
 * js-yaml makes a string of such a collection key, `yaml` keeps it as written.
 */
function isFlowMappingKey(text: string, start: number, parentStart: number | undefined): boolean {
  if (parentStart === undefined || text[contentStart(text, parentStart)] !== "{") return false;
  let before = start - 1;
  while (before >= 0 && /\s/.test(text[before] ?? "")) before -= 1;
  return text[before] === "{" || text[before] === ",";
}

/**
 * js-yaml writes a null key as "null" where `yaml` writes "": such a key takes the slower path.
 * Keys are strings here (MAY_DIFFER sends collections used as keys to `yaml`), so none other
 * differs.
 */
function keysAgree(data: unknown): boolean {
  if (typeof data !== "object" || data === null) return true;
  if (Array.isArray(data)) {
    for (const item of data) if (!keysAgree(item)) return false;
    return true;
  }
  // js-yaml's mappings are plain objects with only their own keys (`__proto__` included, as an
  // own property): `for…in` walks them without building an array of entries for each.
  const record = data as Record<string, unknown>;
  for (const key in record) if (key === "null" || !keysAgree(record[key])) return false;
  return true;
}

/**
 * YAML 1.2's core schema (spec 10.3.2) as the `yaml` package resolves plain scalars, each form
 * with what it reads as, in `yaml`'s order. The tag is stagechart's own, so an explicit `!!int`
 * is unknown to js-yaml and left to `yaml`.
 */
const CORE_SCALARS: readonly (readonly [RegExp, (text: string) => unknown])[] = [
  [/^(?:~|[Nn]ull|NULL)$/, () => null],
  [/^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/, (text) => /^[tT]/.test(text)],
  [/^[-+]?[0-9]+$/, (text) => Number.parseInt(text, 10)],
  [/^0o[0-7]+$/, (text) => Number.parseInt(text.slice(2), 8)],
  [/^0x[0-9a-fA-F]+$/, (text) => Number.parseInt(text.slice(2), 16)],
  [/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/, Number.parseFloat],
  [
    /^[-+]?\.(?:inf|Inf|INF)$/,
    (text) => (text.startsWith("-") ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY),
  ],
  [/^\.(?:nan|NaN|NAN)$/, () => Number.NaN],
];

/**
 * Any of the forms at once. js-yaml tries each implicit type on every plain scalar, and most are
 * strings that none matches: one type, one pattern, is one test for them instead of eight.
 */
const ANY_CORE_SCALAR = new RegExp(CORE_SCALARS.map(([form]) => `(?:${form.source})`).join("|"));

const CORE_1_2 = FAILSAFE_SCHEMA.extend({
  implicit: [
    new Type("tag:stagechart,2026:plain-core", {
      kind: "scalar",
      resolve: (text: string | null) => text !== null && ANY_CORE_SCALAR.test(text),
      construct: (text: string) => {
        for (const [form, read] of CORE_SCALARS) if (form.test(text)) return read(text);
        return text;
      },
    }),
  ],
});
