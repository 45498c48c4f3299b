// The page's job client: submits code to the API, follows the job's events (api.js `followJob`),
// fetches its result index (while it runs, only when new; the final one in full) and cancels it.
// It owns the job shown (`current`); the page shows what it hands to `show(data, final)`.

import { api, followJob } from "./api.js";
import { toast } from "./dom.js";
import { chosenEnvironment } from "./environments.js";

export class JobClient {
  // `run`: the run panel (its status, stage, phase events); `timing`: the page's timings of a
  // run (window.__tbTiming); `show(data, final)`: a result index arrived; `refused(error)`: the
  // server did not take the job; `following()`: the job runs and can be cancelled.
  constructor({ run, timing, show, refused, following }) {
    Object.assign(this, { run, timing, show, refused, following });
    this.current = null; // {id, key, finished, source, stop}: the job or stored result shown
    this.submits = 0; // submits and forgets: a submit that a newer one overtook drops its job
    this.refreshing = null; // the refresh in flight
    this.refreshAgain = null; // the job to refresh once more after it
  }

  // A stored result is shown (no job).
  adopt(key, source) {
    this.current = { id: null, key, finished: true, source };
  }

  // The shown job is no longer followed; resolves once the server has let go of it (which
  // frees this client's slot for the next job).
  forget() {
    const previous = this.current;
    this.submits++; // a submit still waiting for the server drops its job
    this.current = null;
    previous?.stop?.();
    return previous?.id && !previous.finished ? api.cancel(previous.id).catch(() => {}) : null;
  }

  // `cancelled`: what `forget` returned (the previous job let go of).
  async submit(source, options, cancelled) {
    const submit = this.submits;
    await cancelled;
    let job;
    try {
      job = await api.compile(source, options, chosenEnvironment());
    } catch (error) {
      if (submit === this.submits) this.refused(error);
      return;
    }
    if (submit !== this.submits) { // e.g. Ctrl+Enter while the first visit's lesson was being submitted
      api.cancel(job.handle).catch(() => {});
      return;
    }
    this.current = { id: job.handle, key: job.key, finished: false, source };
    if (job.status === "done" || job.status === "failed") return this.refresh(job.handle, true);
    if (this.run.cancelled) return this.cancel(); // Escape while it was being submitted
    this.following();
    this.follow(job.handle);
  }

  follow(jobId) {
    const { run, timing } = this;
    this.current.stop = followJob(jobId, {
      status: (e) => run.status(e),
      stage: (e) => {
        timing.firstStage ??= performance.now() - timing.submit;
        run.stage(e);
        this.scheduleRefresh(jobId);
      },
      phase: (e) => run.phase(e),
      progress: (data) => {
        if (this.current?.id !== jobId) return;
        run.status({ status: data.status });
        if (data.phase) run.phase(data.phase);
        this.show(data, false);
      },
      polling: () => toast("Live updates are busy on this server: checking the job every second instead", 4000),
      done: () => { timing.doneEvent = performance.now() - timing.submit; this.refresh(jobId, true); },
      lost: (error) => toast(`Lost this job: ${error.message}`, 8000),
    });
  }

  async refresh(jobId, final) {
    const { current } = this;
    const data = await api.handle(jobId, final ? null : current?.version);
    if (this.current !== current || current.id !== jobId || (current.finished && !final)) return; // a late answer
    current.version = data.version;
    if (final) {
      current.finished = true;
      current.stop?.();
    }
    if (final || !data.unchanged) this.show(data, final);
  }

  // At once on a stage event, then one refresh at a time: events during one ask for one more.
  scheduleRefresh(jobId) {
    if (this.refreshing) { this.refreshAgain = jobId; return; }
    this.refreshing = this.refresh(jobId, false).catch(() => {}).finally(() => {
      const next = this.refreshAgain;
      this.refreshing = this.refreshAgain = null;
      if (next) this.scheduleRefresh(next);
    });
  }

  async cancel() {
    const { current, run } = this;
    if (!current) run.cancelled = true; // still being submitted: `submit` cancels it on arrival
    else if (!current.finished) {
      run.cancelled = true;
      try {
        const { status } = await api.cancel(current.id);
        // The server ends a cancelled handle at once: show that now, not when the event stream
        // (or a poll, on a busy server) brings it.
        if (status === "failed" || status === "done") await this.refresh(current.id, true);
        else toast("Cancelling ...");
      } catch (e) {
        run.cancelled = false;
        toast(e.message);
      }
    }
  }
}
