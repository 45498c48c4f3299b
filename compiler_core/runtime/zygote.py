"""The warm zygote and the job processes it forks: the code that runs inside the sandbox.

The zygote (`python -m compiler_core.runtime.zygote`, started by `worker.Worker` inside bubblewrap, see
`sandbox.py`) imports torch and runs one trivial CPU compile, so a job pays neither `import torch`
nor Inductor's lazy initialisation. Where a GPU is visible it warms nothing that a fork can't
inherit (CUDA): each job process initialises CUDA itself, ahead of its job ("standby").
With TORCHBOLT_WARM=0 (the CLI's one job) the zygote skips its CPU warm-up: the job pays its own
first compile. A GPU job's process still warms up: that warm-up also keeps the timings' own
kernels (L2 flush, accuracy check) out of the job's kernel list.

Protocol with the supervisor, on a SOCK_SEQPACKET socket, one JSON message each:
  supervisor -> zygote  {"process", "sandboxed", "disk_mb", "job_dir", "tmp_mounts"}
                         with fds [control, records, stdout, stderr, fault] and, where the
                         job process warms up (GPU), the timing lock (see `warm_up`)
  zygote -> supervisor  {"ready", "warm_s", "fresh_process_per_job", "gpu"} once, then
                         {"process", "exit": code} per job process.
Per job process, on its own `control` socket (the job never holds the zygote's socket):
  job -> "join" (the kernel attaches its host PID; the supervisor puts it in the job's cgroup)
  supervisor -> "go";  job -> "ready" (isolated, warm);  supervisor -> job JSON + [source fd];
  job -> "started" (the time limit starts now), then closes `control` and runs the script.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sys
import threading
import time

from . import jail
from ..options import OUTPUT_FILE_LIMIT, Options

MAX_MESSAGE = 1 << 16


def warm_up(device: str, timing_lock_fd: int | None = None) -> None:
    """Pay torch's import and Inductor's first compile on `device` before any job: Dynamo,
    AOTAutograd, Inductor's lowering and codegen, and the kernel compiler (C++ or Triton).
    The zygote warms on the CPU; on a GPU machine each job's process (forked ahead of its job,
    see `supervisor/worker.py`) initialises CUDA and compiles once on it instead (a fork cannot
    inherit CUDA; a CPU compile there, C++ toolchain and all, took about a minute on the H200
    machine, more than it saves a GPU job). The GPU warm-up's own timings hold the GPU's timing
    lock (`timing_lock_fd`), as a job's timings do: no job times beside them; and only if it is
    free: waiting for a running job's timings would hold back the next job's start, while the
    costs they save (about 0.5 s) are paid inside the job's own timings otherwise."""
    import torch
    import torch._dynamo
    from torch._inductor import compile_fx  # noqa: F401  (import cost is the point)

    from .config import configure_process
    configure_process()
    if device == "cuda":
        import triton  # noqa: F401
        torch.cuda.init()

    def small(x):
        return (x * 2).relu().sum()
    x = torch.randn(8, device=device)
    compiled = torch.compile(small)
    compiled(x)
    if device == "cuda":  # here, ahead of the job, not on its clock
        from .gpu import triton_kernels
        from .measure.lock import held_if_free
        from .measure.timing import warm_up as warm_up_timings
        with held_if_free(timing_lock_fd) as free:
            if free:
                warm_up_timings(small, compiled, x)
        triton_kernels.note_warm_up_kernels()
    torch._dynamo.reset()
    from .compat import build_algorithm_selector_cache
    build_algorithm_selector_cache()
    from .opsets import opsets
    opsets()  # cached: every job forked from here reports it at no cost


def needs_fresh_process() -> bool:
    """Warm CUDA per job where a GPU is visible (NVML check: it does not initialise CUDA)."""
    import torch
    return os.environ.get("TORCHBOLT_FRESH_PROCESS") == "1" or torch.cuda.is_available()


def inductor_tmp_view(warm_cpu: bool) -> str | None:
    """Inductor's default folder (`$TMPDIR/torchinductor_USER`, where its precompiled headers
    live whatever TORCHINDUCTOR_CACHE_DIR says) when jobs should see the zygote's: after a CPU
    warm-up built the header there, or where it is the CLI's kept one (TORCHBOLT_KEPT_HEADER,
    buildcache.py). Jobs see it through an overlay (`jail.mount_job_files`)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    path = default_cache_dir()
    if os.path.dirname(path) != "/tmp" or not os.path.isdir(path):
        return None
    return path if warm_cpu or os.environ.get("TORCHBOLT_KEPT_HEADER") == path else None


def header_missing() -> bool:
    """The CLI's kept header folder has none built by this torch's warm-up yet (a later run
    then skips the warm-up; a job still builds, privately, one for other compile flags)."""
    kept = os.environ.get("TORCHBOLT_KEPT_HEADER")
    return bool(kept) and not os.path.exists(_warmed_stamp(kept))


def _warmed_stamp(folder: str) -> str:
    import torch
    return os.path.join(folder, f"torchbolt-warmed-{torch.__version__}")


def _send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode())


def _expect(control: socket.socket, word: bytes) -> None:
    if control.recv(64) != word:
        os._exit(70)  # the supervisor went away or broke protocol: nothing to run


def isolate(spec: dict, fds: list[int]) -> socket.socket:
    """In the job process: namespaces (sandboxed) or a session of its own, the job's cgroup,
    private files, output to the supervisor's files, then (GPU) CUDA warm-up. Returns the
    control socket; the calling process is the job's PID 1 when sandboxed."""
    control_fd, records, stdout, stderr, fault, *warm_lock = fds
    jail.die_with_parent()
    if spec["sandboxed"]:
        jail.enter_namespaces()
        pid = os.fork()
        if pid:
            jail.mirror_exit(pid)
        jail.die_with_parent()
    else:
        os.setsid()
    control = socket.socket(fileno=control_fd)
    control.send(b"join")
    _expect(control, b"go")
    if spec["sandboxed"]:
        jail.mount_job_files(spec["job_dir"], spec["disk_mb"], spec.get("tmp_view"),
                             tuple(spec.get("tmp_mounts", ())))
        jail.drop_privileges()
    os.chdir(spec["job_dir"])
    caches = os.environ.get("TORCHBOLT_BUILD_CACHE") or spec["job_dir"]  # the CLI's, or the job's
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(caches, "inductor-cache")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(caches, "triton-cache")
    if spec["warm_fresh"]:
        import torch
        warm_up("cuda" if torch.cuda.is_available() else "cpu", *warm_lock)
    for fd in warm_lock:
        os.close(fd)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit raises instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_LIMIT, OUTPUT_FILE_LIMIT))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, target in ((stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    spec["records_fd"], spec["fault_fd"] = records, fault
    return control


def receive_job(control: socket.socket) -> dict:
    control.send(b"ready")
    data, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 2)
    if not data:
        os._exit(70)
    job = json.loads(data)
    with os.fdopen(fds[0], encoding="utf-8") as fh:
        job["source"] = fh.read()
    job["timing_lock_fd"] = fds[1] if job.get("timing_lock") and len(fds) > 1 else None
    with open(job["user_file"], "w", encoding="utf-8") as fh:
        fh.write(job["source"])
    control.send(b"started")
    control.close()
    return job


def run_job_process(job: dict, records_fd: int, fault_fd: int) -> None:
    """Run the script, writing its records to `records_fd` (faulthandler: to `fault_fd`)."""
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    import faulthandler
    fault_file = os.fdopen(fault_fd, "w")
    faulthandler.enable(fault_file, all_threads=False)
    faulthandler.register(signal.SIGUSR1, fault_file, all_threads=False)
    # The same dump at the time limit without a signal, for a script that ignores SIGUSR1.
    options = Options.from_dict(job["options"])
    faulthandler.dump_traceback_later(max(0.1, options.timeout - 0.1), file=fault_file)

    import torch._dynamo
    torch._dynamo.reset()
    from ..wire import RecordWriter
    from .runner import run_job
    with os.fdopen(records_fd, "w", encoding="utf-8") as stream:
        run_job(job["source"], job["user_file"], options, RecordWriter(stream),
                timing_lock_fd=job["timing_lock_fd"])


def job_process_main(spec: dict, fds: list[int]) -> None:
    """In the forked child: isolate, wait for the job, run it. Never returns."""
    try:
        control = isolate(spec, fds)
        run_job_process(receive_job(control), spec["records_fd"], spec["fault_fd"])
    except BaseException:  # torchbolt's own failure: its traceback goes to the job's stderr
        import traceback
        traceback.print_exc()
    finally:
        os._exit(0)


def zygote_main() -> None:
    sock = socket.socket(fileno=int(os.environ.pop("TORCHBOLT_PROTOCOL_FD")))
    os.dup2(2, 1)  # anything torch prints goes to stderr
    started = time.monotonic()
    fresh = needs_fresh_process()
    # TORCHBOLT_WARM=0: one job (the CLI) on the CPU, which a warm-up would not speed up,
    # unless it builds the header the CLI keeps (the job may not write that)
    build_header = header_missing()
    warm_cpu = not fresh and (os.environ.get("TORCHBOLT_WARM") != "0" or build_header)
    if warm_cpu:
        warm_up("cpu")
        if build_header:
            open(_warmed_stamp(os.environ["TORCHBOLT_KEPT_HEADER"]), "w").close()
    tmp_view = inductor_tmp_view(warm_cpu)
    lock = threading.Lock()

    def send(message: dict) -> None:
        with lock:
            _send(sock, message)

    def reap(name: str, pid: int) -> None:
        send({"process": name, "exit": os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])})

    import torch
    send({"ready": True, "warm_s": round(time.monotonic() - started, 2),
          "fresh_process_per_job": fresh, "gpu": torch.cuda.is_available()})
    while True:
        data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 6)
        if not data:  # the supervisor closed the socket: it stopped, or it died
            # End now, not through Python's shutdown (seconds with torch loaded, more on a busy
            # machine): the job processes die with the zygote (their parent-death signal), and
            # where the server runs as root nothing else ends them when it is killed (the outer
            # bwrap can't signal the inner one, which setpriv moved to uid 65534).
            os._exit(0)
        spec = {**json.loads(data), "warm_fresh": fresh, "tmp_view": tmp_view}
        pid = os.fork()
        if pid == 0:
            sock.close()
            job_process_main(spec, fds)
        for fd in fds:
            os.close(fd)
        threading.Thread(target=reap, args=(spec["process"], pid), daemon=True).start()


if __name__ == "__main__":
    zygote_main()
