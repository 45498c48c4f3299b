// The JSON API (see app/api.py). Every error answer is {ok: false, error, status}.

async function request(method, url, body) {
  const form = body instanceof FormData; // file uploads go as they are
  const response = await fetch(url, {
    method,
    headers: body && !form ? { "Content-Type": "application/json" } : {},
    body: body && !form ? JSON.stringify(body) : body,
  });
  let data;
  try {
    data = await response.json();
  } catch {
    throw new Error(`server answered ${response.status} without JSON`);
  }
  if (!data.ok) {
    throw Object.assign(new Error(data.error || `server answered ${response.status}`),
                        { status: response.status });
  }
  return data;
}

const jobUrl = (id) => `/api/jobs/${encodeURIComponent(id)}`;
const resultUrl = (key) => `/api/results/${encodeURIComponent(key)}`;

export const api = {
  compile: (source, options, environment) => request("POST", "/api/compile",
    { source, options, environment }),
  // A submit's handle: its run's status with its result as an *index* (each stage without its
  // text, app/transport.py); `since`, the version last seen: then only what is new
  // (`unchanged: true`, no result).
  handle: (id, since) => request("GET", `${jobUrl(id)}?` +
    new URLSearchParams(since ? { view: "index", since } : { view: "index" })),
  // One stage's full part, {artifact}, of a handle's result or of a
  // stored one: `where` is {handle} or {key}. Only an indexed result needs it: a whole result
  // (a share link's, or one embedded in a page) has every text already.
  stage: (where, compileId, stage) => request("GET", `${where.handle ? jobUrl(where.handle) : resultUrl(where.key)}` +
    `/stage?${new URLSearchParams({ compile: compileId, stage })}`),
  // A stored result, whole, with its code and options: {key, source, options, result}.
  result: (key) => request("GET", resultUrl(key)),
  cancel: (id) => request("POST", `/api/jobs/${encodeURIComponent(id)}/cancel`),
  status: () => request("GET", "/api/status"),
  graph: (key, compileId, stage, collapse, expanded = null) => embedded
    ? embeddedGraph(compileId, stage, collapse, expanded)
    : request("GET", `/api/results/${encodeURIComponent(key)}/graph?` +
      new URLSearchParams({ compile: compileId, stage, collapse,
                            ...(expanded ? { expand: JSON.stringify(expanded) } : {}) })),
  reportUrl: (key) => `/api/results/${encodeURIComponent(key)}/report.html`,
  traceLog: (files) => {
    const form = new FormData();
    for (const file of files) form.append("log", file, file.name);
    return request("POST", "/api/trace", form);
  },
};

// ---------------------------------------------------------------- static reports
// A report file (`python -m compiler_core report`, the page's "Download report") is the page with
// its data embedded in boot.report: the result itself travels as boot.share, and `embedded`
// holds each graph view as first shown and the vendored scripts loaded on demand. `embedded` is
// null on the served page. Every accessor of server data answers from it when it is set (a
// stage text fetched on demand reads the embedded result's compiles[i].stages[STAGE]).
export const embedded = JSON.parse(document.getElementById("boot").textContent).report ?? null;

async function embeddedGraph(compileId, stage, collapse, expanded) {
  const graph = embedded.graphs[`${compileId} ${stage}`];
  if (!graph) throw new Error("this report holds no graph for this stage");
  if (collapse !== "auto" || expanded) {
    throw new Error("a report holds each graph as first shown: open torchbolt to expand its groups");
  }
  return graph;
}

// The URL of a vendored script (path under static/): a data URL in a report.
export const assetUrl = (path) => embedded?.assets[path] ?? `/static/${path}`;

// Live progress of one job: its server-sent events, or, when the server refuses the stream (a
// 429 over its caps on open streams) or the stream is lost for good, polling GET /api/jobs/ID
// every `pollMs`. Handlers: status, stage and phase (events: a phase is a long step after the
// script, such as the timings, in the engine's words), progress (each poll's job), polling (once,
// on falling back), done (the `done` event or the finished job), lost (the job is gone).
// Returns a function that stops following.
export function followJob(id, handlers, pollMs = 1000) {
  let stopped = false;
  let timer = null;
  const finish = (data) => { stopped = true; source.close(); clearTimeout(timer); handlers.done?.(data); };
  let since = null;
  const poll = async () => {
    timer = null;
    let job = null;
    try {
      job = await api.handle(id, since);
      since = job.version;
    } catch (error) {
      if (error.status === 404 || error.status === 401) {
        stopped = true;
        handlers.lost?.(error);
        return;
      }
    }
    if (stopped) return;
    if (job?.status === "done" || job?.status === "failed") return finish(job);
    if (job && !job.unchanged) handlers.progress?.(job);
    timer = setTimeout(poll, pollMs); // also after a network blip: try again
  };
  const source = new EventSource(`/api/jobs/${encodeURIComponent(id)}/events`);
  for (const type of ["status", "stage", "phase"]) {
    source.addEventListener(type, (e) => handlers[type]?.(JSON.parse(e.data)));
  }
  source.addEventListener("done", (e) => finish(JSON.parse(e.data)));
  source.onerror = () => {
    // CONNECTING: the browser reconnects by itself; CLOSED: refused (429, 401 ...) for good.
    if (stopped || source.readyState !== EventSource.CLOSED) return;
    handlers.polling?.();
    poll();
  };
  return () => { stopped = true; source.close(); clearTimeout(timer); };
}
