import { h } from "./dom.js";

/** How often the time left is counted down on the page. */
const TICK_MS = 1000;
let ticking: ReturnType<typeof setInterval> | undefined;

/**
 * The deadline of a wait (a question or a grant request) and the time left until nobody
 * answering is taken as its timeout's fallback, counted down every second; nothing when the wait
 * has no deadline.
 */
export function deadlineBadge(deadline: string | undefined): HTMLElement | false {
  if (deadline === undefined) return false;
  const badge = h("span", {
    class: "deadline",
    "data-deadline": deadline,
    title: `answer by ${new Date(deadline).toLocaleString()}`,
  });
  badge.textContent = timeLeft(Date.parse(deadline) - Date.now());
  ticking ??= setInterval(tick, TICK_MS);
  return badge;
}

function tick(): void {
  const badges = document.querySelectorAll<HTMLElement>("[data-deadline]");
  for (const badge of badges)
    badge.textContent = timeLeft(Date.parse(badge.dataset.deadline ?? "") - Date.now());
  if (badges.length === 0) {
    clearInterval(ticking);
    ticking = undefined;
  }
}

/** `4m 05s left`, `2h 10m 05s left`, `3d 4h left`; `deadline passed` once it has. */
export function timeLeft(ms: number): string {
  if (!(ms > 0)) return "deadline passed";
  const seconds = Math.floor(ms / 1000);
  const [d, hr, m, s] = [
    Math.floor(seconds / 86_400),
    Math.floor(seconds / 3600) % 24,
    Math.floor(seconds / 60) % 60,
    seconds % 60,
  ];
  const two = (n: number) => String(n).padStart(2, "0");
  if (d > 0) return `${d}d ${hr}h left`;
  if (hr > 0) return `${hr}h ${two(m)}m ${two(s)}s left`;
  if (m > 0) return `${m}m ${two(s)}s left`;
  return `${s}s left`;
}
