#!/usr/bin/env python3
# paratune measure's benchmark (docs/measure.md), run by `paratune measure` as one process per Slurm task with the
# site's own PyTorch (nothing is installed). It times, on every rank's device: dense GEMMs of transformer shapes per
# precision the device has, attention (SDPA; the unfused product where this PyTorch has none), a streaming copy,
# and collectives (all-reduce, all-gather, reduce-scatter, all-to-all, send/recv over message sizes) among the ranks
# of one node and across all nodes (NCCL on GPUs, gloo on CPUs). Rank 0 writes the raw figures as JSON (--out);
# the fit into the model's terms is paratune's (C++). Bounded in time: every phase gets a share of --budget and
# stops early when it is spent; progress goes to stderr on rank 0.
import argparse
import json
import os
import platform
import socket
import sys
import time

PHASE_SHARE = {"gemm": 0.3, "attention": 0.15, "copy": 0.1, "collectives": 0.45}


class Clock:
    def __init__(self, budget):
        self.start = time.perf_counter()
        self.budget = budget
        self.phase_end = self.start

    def begin(self, phase):
        now = time.perf_counter()
        self.phase_end = min(self.start + self.budget, now + PHASE_SHARE[phase] * self.budget)

    def left(self):
        return self.phase_end - time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.start


def say(ctx, msg):
    if ctx["rank"] == 0:
        print("paratune measure: [%5.1f s] %s" % (ctx["clock"].elapsed(), msg), file=sys.stderr, flush=True)


def sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(torch, device, fn, clock, min_reps=3, max_reps=50):
    """Median seconds of fn() over repetitions, after one warm-up; fewer repetitions when the phase runs short."""
    fn()
    sync(torch, device)
    times = []
    while len(times) < max_reps:
        t0 = time.perf_counter()
        fn()
        sync(torch, device)
        times.append(time.perf_counter() - t0)
        if len(times) >= min_reps and (sum(times) > 0.5 or clock.left() < 0):
            break
    times.sort()
    return times[len(times) // 2]


def dtypes_of(torch, device):
    if device.type == "cpu":
        return [("bf16", torch.bfloat16), ("fp32", torch.float32)]
    out = []
    if torch.cuda.is_bf16_supported():
        out.append(("bf16", torch.bfloat16))
    out.append(("fp16", torch.float16))
    return out


def gemm_phase(ctx, quick):
    torch, device, clock = ctx["torch"], ctx["device"], ctx["clock"]
    clock.begin("gemm")
    hs = [256] if quick else ([1024, 2048] if device.type == "cpu" else [4096, 8192])
    tokens = 256 if quick else (1024 if device.type == "cpu" else 8192)
    shapes = []
    for h in hs:  # QKV, attention projection, MLP up (gated: 2 x 4h/...), MLP down: (M tokens, N out, K in)
        shapes += [(tokens, 3 * h, h), (tokens, h, h), (tokens, 4 * h, h), (tokens, h, 4 * h)]
    points = []
    for name, dt in dtypes_of(torch, device)[: 1 if quick else None]:
        for (m, n, k) in shapes:
            if clock.left() < 0:
                ctx["skipped"].append("gemm %s %dx%dx%d: time budget spent" % (name, m, n, k))
                continue
            a = torch.randn(m, k, device=device).to(dt)
            b = torch.randn(k, n, device=device).to(dt)
            s = timed(torch, device, lambda: torch.matmul(a, b), clock)
            tflops = 2.0 * m * n * k / s / 1e12
            points.append({"dtype": name, "m": m, "n": n, "k": k, "tflops": tflops})
            say(ctx, "gemm %s %dx%dx%d: %.3g TFLOP/s" % (name, m, n, k, tflops))
    points += fp8_gemm(ctx, shapes)
    return points


def fp8_gemm(ctx, shapes):
    torch, device, clock = ctx["torch"], ctx["device"], ctx["clock"]
    if device.type != "cuda" or not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        ctx["skipped"].append("gemm fp8: needs a GPU and torch._scaled_mm")
        return []
    if torch.cuda.get_device_capability(device) < (8, 9):
        ctx["skipped"].append("gemm fp8: the GPU has no FP8 tensor cores")
        return []
    points = []
    one = torch.tensor(1.0, device=device)
    for (m, n, k) in shapes:
        if clock.left() < 0:
            break
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()
        try:
            s = timed(torch, device, lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                              out_dtype=torch.bfloat16), clock)
        except Exception as e:  # the signature moved between releases
            ctx["skipped"].append("gemm fp8: %s" % str(e)[:120])
            return points
        points.append({"dtype": "fp8", "m": m, "n": n, "k": k, "tflops": 2.0 * m * n * k / s / 1e12})
        say(ctx, "gemm fp8 %dx%dx%d: %.3g TFLOP/s" % (m, n, k, points[-1]["tflops"]))
    return points


def attention_phase(ctx, quick):
    torch, device, clock = ctx["torch"], ctx["device"], ctx["clock"]
    clock.begin("attention")
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    kernel = "sdpa" if sdpa else "unfused"
    dt = torch.float32 if device.type == "cpu" else (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    name = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dt]
    configs = [(1, 4, 256, 64), (1, 4, 512, 64)] if quick else (
        [(1, 8, 1024, 64), (1, 8, 2048, 128)] if device.type == "cpu" else
        [(4, 32, 2048, 128), (2, 32, 4096, 128), (1, 32, 8192, 128), (2, 64, 4096, 64)])
    points = []
    for (b, h, s, d) in configs:
        if clock.left() < 0:
            ctx["skipped"].append("attention %d x %d x %d x %d: time budget spent" % (b, h, s, d))
            continue
        q, k, v = (torch.randn(b, h, s, d, device=device).to(dt) for _ in range(3))
        if sdpa:
            fn = lambda: sdpa(q, k, v)
        else:
            scale = d ** -0.5
            fn = lambda: torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * scale, dim=-1), v)
        sec = timed(torch, device, fn, clock)
        tflops = 4.0 * b * h * s * s * d / sec / 1e12
        points.append({"dtype": name, "kernel": kernel, "batch": b, "heads": h, "seq": s, "head_dim": d,
                       "tflops": tflops})
        say(ctx, "attention (%s) b=%d heads=%d seq=%d d=%d: %.3g TFLOP/s" % (kernel, b, h, s, d, tflops))
    return points


def copy_phase(ctx, quick):
    torch, device, clock = ctx["torch"], ctx["device"], ctx["clock"]
    clock.begin("copy")
    mib = [4, 16, 64] if quick else ([64, 256, 512] if device.type == "cpu" else [256, 1024, 4096])
    points = []
    for m in mib:
        if clock.left() < 0:
            ctx["skipped"].append("copy %d MiB: time budget spent" % m)
            continue
        n = m * (1 << 20)
        src = torch.empty(n, dtype=torch.uint8, device=device).fill_(1)
        dst = torch.empty_like(src)
        sec = timed(torch, device, lambda: dst.copy_(src), clock)
        points.append({"bytes": float(n), "gbps": 2.0 * n / sec / 1e9})  # read + written
        say(ctx, "copy %d MiB: %.3g GB/s" % (m, points[-1]["gbps"]))
    return points


BUS_FACTOR = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
              "send_recv": lambda n: 1.0}


def collective_fn(ctx, op, group, ranks, nbytes):
    """A callable running `op` on `group` with a buffer of nbytes (per rank: the full buffer), or None (unsupported)."""
    torch, dist, device = ctx["torch"], ctx["dist"], ctx["device"]
    n = len(ranks)
    elems = max(n, nbytes // 4 // n * n)
    x = torch.ones(elems, dtype=torch.float32, device=device)
    if op == "all_reduce":
        return lambda: dist.all_reduce(x, group=group)
    if op == "all_gather":
        parts = [torch.empty(elems // n, dtype=torch.float32, device=device) for _ in range(n)]
        return lambda: dist.all_gather(parts, x[: elems // n], group=group)
    if op == "reduce_scatter":
        if ctx["backend"] == "gloo":
            return None  # ProcessGroupGloo has no reduce_scatter
        out = torch.empty(elems // n, dtype=torch.float32, device=device)
        return lambda: dist.reduce_scatter(out, list(x.chunk(n)), group=group)
    if op == "all_to_all":
        out = torch.empty_like(x)
        return lambda: dist.all_to_all_single(out, x, group=group)
    # send/recv: the group's first two ranks exchange the buffer; the others wait at the barrier of the caller
    me = ctx["rank"]

    def pair():
        if me == ranks[0]:
            dist.send(x, ranks[1])
            dist.recv(x, ranks[1])
        elif me == ranks[1]:
            dist.recv(x, ranks[0])
            dist.send(x, ranks[0])
    return pair


def time_collective(ctx, op, group, ranks, nbytes):
    torch, dist, device = ctx["torch"], ctx["dist"], ctx["device"]
    fn = collective_fn(ctx, op, group, ranks, nbytes)
    if fn is None:
        return None
    reps = 5 if nbytes < (1 << 22) else 3
    fn()
    sync(torch, device)
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync(torch, device)
    sec = (time.perf_counter() - t0) / reps
    if op == "send_recv":
        sec /= 2  # one exchange is two transfers
    worst = torch.tensor([sec], dtype=torch.float64, device=device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX, group=group)  # the slowest rank sets the time
    return worst.item()


def groups_of(ctx):
    """(scope, group, ranks) to measure, the same list on every rank: each node's ranks as a group of its own (when
    every node has several; every rank creates every group) and all ranks across nodes."""
    dist, hosts = ctx["dist"], ctx["hosts"]
    nodes = sorted(set(hosts), key=hosts.index)
    per_node = [[r for r, h in enumerate(hosts) if h == node] for node in nodes]
    out = []
    if all(len(ranks) > 1 for ranks in per_node):
        for ranks in per_node:
            g = dist.new_group(ranks)
            if ctx["rank"] in ranks:
                out.append(("intra", g, ranks))
    else:
        ctx["skipped"].append("intra-node collectives: some node runs one rank")
    if len(nodes) > 1:
        out.append(("inter", None, list(range(ctx["world"]))))
    return out


def collectives_phase(ctx, quick):
    clock = ctx["clock"]
    clock.begin("collectives")
    if ctx["world"] < 2:
        ctx["skipped"].append("collectives: one rank (run under srun with several tasks)")
        return []
    sizes = [1 << s for s in (range(12, 21, 4) if quick else range(10, 31, 2))]
    points = []
    for scope, group, ranks in groups_of(ctx):
        for op in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]:
            for nbytes in sizes:
                # Every rank must agree to go on: the budget check is rank 0's, broadcast.
                go = ctx["torch"].tensor([1.0 if clock.left() > 0 else 0.0], device=ctx["device"])
                ctx["dist"].broadcast(go, 0)
                if go.item() == 0:
                    ctx["skipped"].append("%s %s %d B and larger: time budget spent" % (scope, op, nbytes))
                    break
                sec = time_collective(ctx, op, group, ranks, nbytes)
                if sec is None:
                    ctx["skipped"].append("%s %s: not supported by %s" % (scope, op, ctx["backend"]))
                    break
                n = len(ranks) if op != "send_recv" else 2
                busbw = nbytes / sec * BUS_FACTOR[op](n) / 1e9
                points.append({"op": op, "scope": scope, "ranks": n, "bytes": float(nbytes),
                               "time_us": sec * 1e6, "busbw_gbps": busbw})
            if points and points[-1]["op"] == op:
                say(ctx, "%s %s over %d ranks: %.3g GB/s bus at %d B" % (scope, op, points[-1]["ranks"],
                                                                       points[-1]["busbw_gbps"], points[-1]["bytes"]))
    return points


def software(ctx):
    torch = ctx["torch"]
    sw = {"python": platform.python_version(), "torch": torch.__version__, "backend": ctx["backend"]}
    if ctx["device"].type == "cuda":
        sw["cuda"] = str(torch.version.cuda)
        try:
            sw["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception:
            pass
    return sw


def cpu_name():
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def init_process_group(dist, backend, rank, world, budget):
    import datetime
    timeout = datetime.timedelta(seconds=max(60, int(budget)))
    try:
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world, timeout=timeout)
    except RuntimeError as e:
        # A PyTorch built without libuv (Debian 13's 2.6) still asks for it by default ("use_libuv was requested
        # but PyTorch was build without libuv support"); the env:// store takes USE_LIBUV=0. Every rank runs the
        # same PyTorch, so every rank retries the same way.
        if "libuv" not in str(e):
            raise
        os.environ["USE_LIBUV"] = "0"
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world, timeout=timeout)


def setup(args):
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print("paratune measure: %s cannot import torch (%s): name the site's PyTorch with --python" %
              (sys.executable, e), file=sys.stderr)
        sys.exit(3)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda:
        torch.cuda.set_device(local % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device()) if use_cuda else torch.device("cpu")
    backend = "nccl" if use_cuda else "gloo"
    if world > 1:
        init_process_group(dist, backend, rank, world, args.budget)
    ctx = {"torch": torch, "dist": dist, "device": device, "rank": rank, "world": world, "backend": backend,
           "clock": Clock(args.budget), "skipped": []}
    host = socket.gethostname()
    fp = os.environ.get("PARATUNE_FINGERPRINT", "")
    if world > 1:
        gathered = [None] * world
        dist.all_gather_object(gathered, (host, fp))
    else:
        gathered = [(host, fp)]
    ctx["hosts"] = [h for h, _ in gathered]
    ctx["fingerprints"] = [f for _, f in gathered]
    return ctx


def main():
    ap = argparse.ArgumentParser(description="paratune measure's benchmark (run by `paratune measure`)")
    ap.add_argument("--out", required=True, help="where rank 0 writes the raw figures (JSON)")
    ap.add_argument("--budget", type=float, default=480, help="seconds for all phases (default 480)")
    ap.add_argument("--quick", action="store_true", help="small sizes (tests)")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    args = ap.parse_args()
    ctx = setup(args)
    torch, device = ctx["torch"], ctx["device"]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    say(ctx, "%d ranks on %d nodes, %s, %s, budget %.0f s" % (ctx["world"], len(set(ctx["hosts"])), name,
                                                            ctx["backend"], args.budget))
    result = {"version": 1, "device": device.type, "device_name": name, "world": ctx["world"],
              "hosts": ctx["hosts"], "fingerprints": ctx["fingerprints"], "software": software(ctx),
              "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "GLOO_", "TORCH_NCCL"))}}
    result["gemm"] = gemm_phase(ctx, args.quick)
    result["attention"] = attention_phase(ctx, args.quick)
    result["copy"] = copy_phase(ctx, args.quick)
    result["collectives"] = collectives_phase(ctx, args.quick)
    result["skipped"] = ctx["skipped"]
    result["duration_s"] = ctx["clock"].elapsed()
    if ctx["world"] > 1:
        ctx["dist"].barrier()
    if ctx["rank"] == 0:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, args.out)
        say(ctx, "done")
    if ctx["world"] > 1:
        ctx["dist"].destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # Debian's PyTorch can abort at interpreter shutdown after a process group (fsdp_train.py)


if __name__ == "__main__":
    main()
