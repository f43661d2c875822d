import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { REPO_ROOT } from "../support/cli.js";

/** Debian's chromium (`.ci/run` installs it); never a downloaded browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Why the browser suite cannot run here, or undefined when it can. Under CI=true a missing
 * browser or page is a failure, never a skip.
 */
export function missingBrowser(): string | undefined {
  const missing = !existsSync(CHROMIUM)
    ? `no chromium at ${CHROMIUM} (apt-get install chromium)`
    : !existsSync(join(REPO_ROOT, "dist/visualizer/app.js"))
      ? "the page is not built (npm run build)"
      : undefined;
  if (missing && process.env.CI === "true")
    throw new Error(`the Chromium suite cannot run: ${missing}`);
  return missing;
}

export const launch = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });

/**
 * A page that records what it must never do: a request to anything but the server at
 * 127.0.0.1 (refused, and noted), and console errors.
 */
export async function watchedPage(browser: Browser) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const offsite: string[] = [];
  const consoleErrors: string[] = [];
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === "127.0.0.1") return route.continue();
    offsite.push(url.href);
    return route.abort();
  });
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  return { page, offsite, consoleErrors };
}

/** With STAGECHART_SCREENSHOTS=<dir> (npm run screenshots), a picture of the page for the README. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.STAGECHART_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}
