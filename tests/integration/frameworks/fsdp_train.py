#!/usr/bin/python3
"""A small training loop configured from paratune's FSDP settings file (fsdp.json), for Debian 12's PyTorch 1.13 on
CPU with gloo. Usage (one process per rank, under torchrun): fsdp_train.py FSDP_JSON STEPS

1. Every FullyShardedDataParallel setting is handed to the real PyTorch: the enum members by name
   (ShardingStrategy, BackwardPrefetch), MixedPrecision(**...) with torch dtypes, and the whole keyword set bound
   to FullyShardedDataParallel.__init__'s own signature — an unknown name or value raises here.
2. FSDP1 in PyTorch 1.13 needs CUDA (its streams), so the loop itself runs the same data-parallel plan on CPU with
   the CPU-capable equivalent: DistributedDataParallel, with ZeroRedundancyOptimizer sharding the optimizer state
   when the strategy shards (FULL_SHARD, SHARD_GRAD_OP), the plan's micro-batch and gradient accumulation
   (no_sync between accumulation steps) and full activation checkpointing when the plan says so.
3. Rank 0 prints torchtitan-style metric lines, which `paratune run` recognises and writes to $PARATUNE_REPORT.
"""
import copy
import dataclasses
import inspect
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def import_fsdp():
    # Debian 12's python3-torch 1.13.1 cannot import torch.distributed.fsdp on Python 3.11: a dataclass in
    # torch/distributed/_shard/sharded_tensor/metadata.py has an unhashable default, which 3.11 rejects (PyTorch
    # 2.0 changed it to default_factory). The same default, given as a factory, only for torch's own classes.
    get_field = dataclasses._get_field

    def compat(cls, name, type_, *rest):
        d = cls.__dict__.get(name, dataclasses.MISSING)
        if (isinstance(d, dataclasses.Field) and d.default is not dataclasses.MISSING
                and type(d.default).__hash__ is None and cls.__module__.startswith("torch.")):
            value = d.default
            d.default, d.default_factory = dataclasses.MISSING, (lambda: copy.copy(value))
        return get_field(cls, name, type_, *rest)

    dataclasses._get_field = compat
    try:
        import torch.distributed.fsdp as fsdp
    finally:
        dataclasses._get_field = get_field
    return fsdp


def fsdp_kwargs(fsdp, settings):
    """The FullyShardedDataParallel keyword arguments as PyTorch objects (raises on any unknown name or value)."""
    out = {}
    for key, value in settings.items():
        if key == "sharding_strategy":
            out[key] = fsdp.ShardingStrategy[value]
        elif key == "backward_prefetch":
            out[key] = None if value is None else fsdp.BackwardPrefetch[value]
        elif key == "mixed_precision":
            out[key] = fsdp.MixedPrecision(**{k: getattr(torch, v) for k, v in value.items()})
        else:
            out[key] = value
    inspect.signature(fsdp.FullyShardedDataParallel.__init__).bind(None, torch.nn.Linear(1, 1), **out)
    return out


class Tiny(torch.nn.Module):
    def __init__(self, vocab, hidden, checkpoint):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.block = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(),
                                         torch.nn.Linear(4 * hidden, hidden))
        self.head = torch.nn.Linear(hidden, vocab)
        self.checkpoint = checkpoint

    def forward(self, tokens):
        x = self.embed(tokens)
        if self.checkpoint:
            x = x + torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)
        else:
            x = x + self.block(x)
        return self.head(x)


def main():
    settings = json.load(open(sys.argv[1]))
    steps = int(sys.argv[2])
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    fsdp = import_fsdp()
    kwargs = fsdp_kwargs(fsdp, settings["FullyShardedDataParallel"])
    train = settings["training"]
    mbs, accum, seq = train["micro_batch_size"], train["gradient_accumulation_steps"], train["seq_len"]
    assert train["data_parallel_size"] == world, f"plan's dp {train['data_parallel_size']} != world {world}"
    assert mbs * accum * world == train["global_batch_size"], "micro-batch x accumulation x dp != global batch"
    if rank == 0:
        print(f"paratune-fsdp: PyTorch {torch.__version__} accepted FullyShardedDataParallel("
              + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")", flush=True)
        print(f"paratune-fsdp: world {world} micro_batch {mbs} accumulation {accum} seq {seq} "
              f"checkpointing {train['activation_checkpointing']}", flush=True)
    torch.manual_seed(0)
    vocab = 256
    model = torch.nn.parallel.DistributedDataParallel(Tiny(vocab, 32, train["activation_checkpointing"] == "full"))
    strategy = kwargs["sharding_strategy"].name
    if strategy in ("FULL_SHARD", "SHARD_GRAD_OP"):
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(rank)
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        for micro in range(accum):
            tokens = torch.randint(0, vocab, (mbs, seq), generator=gen)
            ctx = model.no_sync() if micro < accum - 1 else torch.enable_grad()
            with ctx:
                logits = model(tokens[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
                (loss / accum).backward()
        opt.step()
        opt.zero_grad()
        dist.barrier()
        elapsed = time.perf_counter() - t0
        if rank == 0:
            tps = mbs * accum * seq / elapsed  # tokens per second per rank
            print(f"step: {step}  loss: {loss.item():.4f}  memory: 0.00GiB(0.00%)  tps: {tps:.1f}  "
                  f"tflops: 0.00  mfu: 0.00%", flush=True)
    dist.barrier()  # every rank is done before rank 0, which hosts the TCPStore, goes away
    dist.destroy_process_group()
    # Debian 13's PyTorch 2.6 (TCPStore without libuv) now and then aborts rank 0 at interpreter shutdown, after
    # the work is done ("terminate called without an active exception", SIGABRT: a store thread still joinable
    # when its destructor runs). The run is over and everything is flushed: leave without the C++ destructors.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
