import { comparePage } from "./compare-page.js";
import { h } from "./dom.js";
import { machinePage } from "./machine-page.js";
import { PageSocket } from "./net.js";
import { runPage } from "./run-page.js";
import { runsPage } from "./runs-page.js";

const app = document.getElementById("app") as HTMLElement;
const connection = document.getElementById("connection");
const socket = new PageSocket((connected) => {
  connection?.setAttribute("data-connected", String(connected));
  if (connection) connection.textContent = connected ? "live" : "offline";
});

const path = location.pathname;
const run = /^\/runs\/([^/]+)$/.exec(path);
const machine = /^\/machines\/([^/]+)$/.exec(path);
const compare = /^\/compare\/([^/]+)\/([^/]+)$/.exec(path);
const page = run
  ? runPage(app, decodeURIComponent(run[1] as string), socket)
  : compare
    ? comparePage(
        app,
        decodeURIComponent(compare[1] as string),
        decodeURIComponent(compare[2] as string),
      )
    : machine
      ? machinePage(app, decodeURIComponent(machine[1] as string), socket)
      : runsPage(app, socket);
page.catch((error: Error) => app.replaceChildren(h("p", { class: "error" }, error.message)));
