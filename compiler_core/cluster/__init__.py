"""Scale-out on Redis: many web servers and many worker hosts share one queue and one store.

RQ (a small, Redis-only job queue) carries the jobs; each worker *slot* is an RQ `SimpleWorker`
process that runs every job it takes on its own warm `supervisor.Worker`, so each job still runs
in the bubblewrap sandbox, forked from the warm zygote (RQ's own fork per job is not used: the
zygote already forks one sandboxed process per job, and a warm zygote must outlive its jobs).

- `protocol.py`: Redis key names, environment ids, connecting (the URL's password never printed),
  and the run stream: what a worker publishes, live, for every web server to read.
- `slot.py`: one worker slot (the RQ worker process and the function RQ calls per job).
- `host.py`: `python -m compiler_core worker --broker URL`: starts and restarts the slots.
- `reaper.py`: a job whose slot died is retried once elsewhere, or ends as `WorkerDied`.
- `client.py`: the web side: pick an environment, queue a run, read run streams, the store.
- `fairness.py`: runs wait round-robin between clients per environment, and go into RQ one
  per free slot; `leases.py`: each client's live submits, counted for every web server at once.

Nothing here imports torch or Flask; redis and rq are imported only when a broker is used.
"""
