/** A tiny element builder: the page is plain DOM, no framework. */
type Child = Node | string | number | false | null | undefined;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined | ((event: Event) => void)> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.slice(2).toLowerCase(), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  element.append(
    ...children.filter((c): c is Node | string | number => c !== false && c != null).map(String2),
  );
  return element;
}

const String2 = (child: Node | string | number): Node | string =>
  typeof child === "number" ? String(child) : child;

const SVG = "http://www.w3.org/2000/svg";

export function svg(
  tag: string,
  attrs: Record<string, string | number | undefined> = {},
): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs))
    if (value !== undefined) element.setAttribute(name, String(value));
  return element;
}

/** `2026-11-23T17:46:27.313Z` → `17:46:27.313`. */
export const clock = (at: string): string => at.slice(11, 23);
