// The JSON API (see app/api.py). Every error answer is {ok: false, error, status}.

async function request(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  let data;
  try {
    data = await response.json();
  } catch {
    throw new Error(`server answered ${response.status} without JSON`);
  }
  if (!data.ok) throw new Error(data.error || `server answered ${response.status}`);
  return data;
}

export const api = {
  compile: (source, options) => request("POST", "/api/compile", { source, options }),
  job: (id) => request("GET", `/api/jobs/${encodeURIComponent(id)}`),
  cancel: (id) => request("POST", `/api/jobs/${encodeURIComponent(id)}/cancel`),
  status: () => request("GET", "/api/status"),
  graph: (key, compileId, stage, collapse) => request("GET",
    `/api/results/${encodeURIComponent(key)}/graph?` +
    new URLSearchParams({ compile: compileId, stage, collapse })),
};

// Server-sent events of one job; returns a function that closes the stream.
export function followJob(id, handlers) {
  const source = new EventSource(`/api/jobs/${encodeURIComponent(id)}/events`);
  for (const type of ["status", "stage"]) {
    source.addEventListener(type, (e) => handlers[type]?.(JSON.parse(e.data)));
  }
  source.addEventListener("done", (e) => {
    source.close();
    handlers.done?.(JSON.parse(e.data));
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) handlers.lost?.();
  };
  return () => source.close();
}
