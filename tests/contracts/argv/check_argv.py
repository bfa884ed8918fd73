#!/usr/bin/env python3
"""Checks the argv each example launch delivered (argv_path_test.sh) with the frameworks' rebuilt parsers.

  check_argv.py CASES_DIR CONTRACTS_DIR

CASES_DIR/<case>/argv holds the argv the launched program (torchrun or nemo) received, NUL-separated, the program
name first; case.json what it must say (the model preset's facts and the plan the files were written for). Exit 0
when every case parses as its framework would and carries the plan's values; else 1, one line per failure.
"""

import functools
import importlib.util
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parsers  # noqa: E402
from parsers import Reject  # noqa: E402


def expect(what, got, want):
    if got != want:
        raise Reject("%s: got %r, want %r" % (what, got, want))


def parse(fn, *args):
    try:
        return fn(*args)
    except SystemExit as e:  # a real parser (python3-torch's torchrun) exits on bad input
        raise Reject("the parser exited with status %s" % e.code)


def check_megatron(f, ns):
    expect("--tensor-model-parallel-size", ns.tensor_model_parallel_size, f["tp"])
    expect("--pipeline-model-parallel-size", ns.pipeline_model_parallel_size, f["pp"])
    expect("--micro-batch-size", ns.micro_batch_size, f["micro_batch"])
    expect("--global-batch-size", ns.global_batch_size, f["global_batch"])
    expect("--seq-length", ns.seq_length, f["seq_len"])
    if f["moe"]:
        expect("--expert-model-parallel-size", ns.expert_model_parallel_size, f["ep"])
        expect("--expert-tensor-parallel-size", ns.expert_tensor_parallel_size, f["etp"])
        expect("--moe-token-dispatcher-type", ns.moe_token_dispatcher_type, f["dispatcher"])
        if f["moe_dense_layers"] > 0:  # the preset's facts: leading dense layers, then MoE layers
            dense, layers = f["moe_dense_layers"], f["layers"]
            expect("--moe-layer-freq", ns.moe_layer_freq, [0] * dense + [1] * (layers - dense))
    expect("--use-distributed-optimizer", ns.use_distributed_optimizer, f["zero_stage"] == 1)
    fused = bool(getattr(ns, "cross_entropy_loss_fusion", False))  # Megatron-DeepSpeed has no such flag
    expect("--cross-entropy-loss-fusion", fused, f["loss_fusion"] != "off")
    if f["loss_fusion"] != "off":
        expect("--cross-entropy-fusion-impl", ns.cross_entropy_fusion_impl, f["loss_fusion"])
    instances = ns.num_distributed_optimizer_instances  # not given: argparse's default, 1 (the contract's)
    expect("--num-distributed-optimizer-instances", 1 if instances is None else instances, optimizer_instances(f))
    layout = getattr(ns, "pipeline_model_parallel_layout", None)
    if layout is not None:
        stages = parsers.layout_stages(layout)
        expect("layout stages", len(stages), f["pp"] * max(1, f["vpp"]))
        expect("layout transformer layers", sum(s.count("t") for s in stages), f["layers"])
        expect("layout MTP layers", sum(s.count("m") for s in stages), f["mtp_layers"])
        parsers.validate_layer_layout(stages, f["pp"], f["layers"], f["mtp_layers"], f["version"] == "core_v0.15")
        check_layout_split(f, stages)


def check_layout_split(f, stages):
    """A planned split: the first and last ranks (stages r, r + pp, ...) hold the plan's layer counts."""
    pp = f["pp"]
    ranks = [sum(stages[i].count("t") for i in range(r, len(stages), pp)) for r in range(pp)]
    if min(ranks) < 1:
        raise Reject("a pipeline rank without a transformer layer: %s" % ranks)
    if f["first_stage_layers"] and f["last_stage_layers"]:
        expect("layout layers on the first rank", ranks[0], f["first_stage_layers"])
        expect("layout layers on the last rank", ranks[-1], f["last_stage_layers"])


def optimizer_instances(f):
    """Megatron-Core's distributed-optimizer instances a ZeRO-1 plan's sharding scope means: dp*cp / shard_group."""
    ranks = f["dp"] * f["cp"]
    if f["zero_stage"] != 1 or f["shard_group"] <= 0 or f["shard_group"] >= ranks:
        return 1
    if ranks % f["shard_group"]:
        raise Reject("shard_group %d does not divide dp*cp %d" % (f["shard_group"], ranks))
    return ranks // f["shard_group"]


def check_nemo(f, kv):
    expect("tensor_model_parallel_size", kv["trainer.strategy.tensor_model_parallel_size"], f["tp"])
    expect("pipeline_model_parallel_size", kv["trainer.strategy.pipeline_model_parallel_size"], f["pp"])
    expect("data.micro_batch_size", kv["data.micro_batch_size"], f["micro_batch"])
    expect("data.global_batch_size", kv["data.global_batch_size"], f["global_batch"])
    expect("data.seq_length", kv["data.seq_length"], f["seq_len"])
    expect("trainer.num_nodes", kv["trainer.num_nodes"], f["nodes"])
    if f["moe"]:
        expect("expert_model_parallel_size", kv["trainer.strategy.expert_model_parallel_size"], f["ep"])
        expect("moe_token_dispatcher_type", kv["model.config.moe_token_dispatcher_type"], f["dispatcher"])
    if f["loss_fusion"] != "off":
        expect("model.config.cross_entropy_loss_fusion", kv["model.config.cross_entropy_loss_fusion"], True)
        expect("model.config.cross_entropy_fusion_impl", kv["model.config.cross_entropy_fusion_impl"], f["loss_fusion"])
    elif f.get("loss_fusion_stated"):  # stated off: the recipe's own fusion is switched off, not left to the recipe
        expect("model.config.cross_entropy_loss_fusion", kv.get("model.config.cross_entropy_loss_fusion"), False)
    expect("trainer.strategy.num_distributed_optimizer_instances",
           kv.get("trainer.strategy.num_distributed_optimizer_instances", 1), optimizer_instances(f))
    layout = kv.get("trainer.strategy.pipeline_model_parallel_layout")
    if layout is not None:
        stages = parsers.layout_stages(layout)
        expect("layout stages", len(stages), f["pp"] * max(1, f["vpp"]))
        expect("layout transformer layers", sum(s.count("t") for s in stages), f["layers"])
        # NeMo 2.4 runs Megatron-Core 0.14, whose MTP-with-loss assert is always true (parsers.validate_layer_layout).
        parsers.validate_layer_layout(stages, f["pp"], f["layers"], f["mtp_layers"], False)
        check_layout_split(f, stages)


def check_json_file(path, f, contracts):
    with open(path) as fh:
        cfg = json.load(fh)
    if f["framework"] == "deepspeed":
        top = set(parsers.contract(contracts, "deepspeed--" + ("0.16" if f["version"] == "megatron-deepspeed"
                                                                else f["version"]))["top_level_keys"])
        unknown = sorted(set(cfg) - top)
        if unknown:
            raise Reject("not DeepSpeed config keys: %s" % unknown)
        expect("train_batch_size", cfg["train_batch_size"], f["global_batch"])
    else:
        expect("training.data_parallel_size", cfg["training"]["data_parallel_size"], f["dp"])
        expect("training.seq_len", cfg["training"]["seq_len"], f["seq_len"])


@functools.lru_cache(maxsize=None)
def pinned_code(name, version):
    """A framework's own code at its pin, copied verbatim beside this file as NAME--VERSION.py by a script in
    scripts/contracts/ (extract_torchtitan_split.py: torchtitan_split; extract_automodel_stages.py:
    automodel_stages)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "%s--%s.py" % (name, version))
    spec = importlib.util.spec_from_file_location(name + "_" + version.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torchtitan_split_code(version):
    """torchtitan's own stage-split code at the pinned commit."""
    return pinned_code("torchtitan_split", version)


def check_torchtitan_split(f, get):
    """Run torchtitan's split on the emitted parallelism options: it must accept them (its ValueError fails the
    case), build pp x vpp stages, and give the first and last ranks the layers the plan was priced with."""
    pp = f["pp"]
    if pp < 2:
        return
    code = torchtitan_split_code(f["version"])
    schedule = get("pipeline_parallel_schedule", "1F1B")
    # torch.distributed.pipelining.schedules: Schedule1F1B and ScheduleGPipe are PipelineScheduleSingle,
    # ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble and ScheduleZBVZeroBubble PipelineScheduleMulti (the
    # last two through _PipelineScheduleRuntime); ZBV needs exactly two stages per rank.
    single = {"1F1B": True, "GPipe": True, "Interleaved1F1B": False, "InterleavedZeroBubble": False,
              "ZBVZeroBubble": False}[schedule]
    # torchtitan's defaults where an option is not given (ParallelismConfig: 1, 1, None)
    par = types.SimpleNamespace(
        pipeline_parallel_first_stage_less_layers=get("pipeline_parallel_first_stage_less_layers", 1),
        pipeline_parallel_last_stage_less_layers=get("pipeline_parallel_last_stage_less_layers", 1))
    n, first_less, last_less = code.stage_count(types.SimpleNamespace(parallelism=par), par,
                                                types.SimpleNamespace(pp=pp), single,
                                                get("pipeline_parallel_layers_per_stage", None), f["layers"])
    expect("torchtitan's stage count", n, pp * f["vpp"])
    if schedule == "ZBVZeroBubble":
        expect("ZBV's stages per rank", n // pp, 2)
    # torchtitan's pipeline_module_split: stage i on rank i % pp ("loop"), or for the V schedules (ZBVZeroBubble,
    # DualPipeV) rank i for the first pp stages and 2 pp - 1 - i for the rest ("v").
    v_style = schedule in ("ZBVZeroBubble", "DualPipeV")
    ranks = [0] * pp
    for i, modules in enumerate(code.generate_split(n, f["layers"], first_less, last_less)):
        rank = (i if i < pp else 2 * pp - 1 - i) if v_style else i % pp
        ranks[rank] += sum(1 for m in modules if m.startswith("layers."))
    expect("layers torchtitan's split puts on all ranks", sum(ranks), f["layers"])
    if f["first_stage_layers"] or f["last_stage_layers"]:
        expect("layers torchtitan puts on the first rank", ranks[0], f["first_stage_layers"])
        expect("layers torchtitan puts on the last rank", ranks[-1], f["last_stage_layers"])


def check_torchtitan(f, args, contracts):
    if f["version"] == "main":
        kv = parse(parsers.parse_torchtitan_main, contracts, args)
        expect("parallelism.tensor_parallel_degree", kv["parallelism.tensor_parallel_degree"], f["tp"])
        expect("parallelism.pipeline_parallel_degree", kv["parallelism.pipeline_parallel_degree"], f["pp"])
        expect("training.max_context_length", kv["training.max_context_length"], f["seq_len"])
        if f["moe"]:
            expect("parallelism.expert_parallel_degree", kv["parallelism.expert_parallel_degree"], f["ep"])
        check_torchtitan_split(f, lambda key, default: kv.get("parallelism." + key, default))
    else:
        cfg = parse(parsers.parse_torchtitan_v02, contracts, args)
        expect("[parallelism] tensor_parallel_degree", cfg["parallelism"]["tensor_parallel_degree"], f["tp"])
        expect("[parallelism] pipeline_parallel_degree", cfg["parallelism"]["pipeline_parallel_degree"], f["pp"])
        expect("[training] seq_len", cfg["training"]["seq_len"], f["seq_len"])
        if f["moe"]:
            expect("[parallelism] expert_parallel_degree", cfg["parallelism"]["expert_parallel_degree"], f["ep"])
            expect("[parallelism] expert_parallel_comm_backend",
                   cfg["parallelism"].get("expert_parallel_comm_backend", "standard"),
                   "deepep" if f["dispatcher"] == "flex" else "standard")
        check_torchtitan_split(f, lambda key, default: cfg["parallelism"].get(key, default))


def automodel_stage_code(version):
    """AutoModel's own stage count and split at the pin."""
    return pinned_code("automodel_stages", version)


# torch.distributed.pipelining's single-stage schedules (PipelineScheduleSingle): one stage a rank.
SINGLE_STAGE_SCHEDULES = {"1f1b", "gpipe"}


def check_automodel_split(f, kv):
    """Run AutoModel's calculate_virtual_stages and split on the emitted pipeline overrides: it must accept them,
    build pp x vpp stages and give every rank layers (the loop placement: stage s on rank s % pp)."""
    code = automodel_stage_code("v0.5.0")
    pp, layers = f["pp"], f["layers"]
    single = str(kv["distributed.pipeline.pp_schedule"]).lower() in SINGLE_STAGE_SCHEDULES
    n, _ = code.calculate_virtual_stages(layers, kv.get("distributed.pipeline.layers_per_stage"), pp, single,
                                         kv.get("distributed.pipeline.round_virtual_stages_to_pp_multiple"))
    expect("stages AutoModel builds", n, pp * f["vpp"])
    stages = code.generate_hf_model_fqn_per_model_part(n, layers, include_multimodal_encoders=False)
    counts = [sum(1 for m in s if ".layers." in m) for s in stages]
    expect("layers over AutoModel's stages", sum(counts), layers)
    ranks = [sum(counts[s] for s in range(r, n, pp)) for r in range(pp)]
    if min(ranks) < 1:
        raise Reject("AutoModel's split leaves a rank without layers: %s" % ranks)


def check_automodel(f, args, contracts):
    cfg, kv = parse(parsers.parse_automodel, contracts, args)
    expect("--config", cfg, "/data/recipe.yaml")
    for key, want in (("tp_size", f["tp"]), ("pp_size", f["pp"]), ("cp_size", f["cp"]), ("dp_size", f["dp"]),
                      ("ep_size", f["ep"])):
        expect("distributed." + key, kv.get("distributed." + key, 1), want)
    expect("distributed.strategy", kv["distributed.strategy"], "fsdp2" if f["zero_stage"] >= 2 else "ddp")
    accum = f["global_batch"] // (f["dp"] * f["micro_batch"])
    local = kv["step_scheduler.local_batch_size"]
    expect("step_scheduler.global_batch_size", kv["step_scheduler.global_batch_size"], f["global_batch"])
    if f["pp"] > 1:
        expect("pipeline micro-batches", local // kv["distributed.pipeline.pp_microbatch_size"], accum)
        check_automodel_split(f, kv)
    else:
        expect("gradient accumulation steps", f["global_batch"] // (local * f["dp"]), accum)
    # Only AutoModel's own models (_transformers/registry.py MODEL_ARCH_MAPPING, extracted) read model.backend
    # (model_init.py:925-929) or take ep_size > 1 (capabilities.py:373-384); HF's from_config gets neither.
    custom = f["hf_architecture"] in parsers.contract(contracts, "automodel--v0.5.0")["custom_architectures"]["names"]
    backend = sorted(k for k in kv if k.startswith("model.backend."))
    if f["moe"] and not f["hf_architecture"]:
        raise Reject("MoE preset %s without its HF architecture" % f["preset"])
    if (backend or f["ep"] > 1) and f["moe"] and not custom:
        raise Reject("%s (%s) is not one of AutoModel's own models: %s, ep_size %d" %
                     (f["preset"], f["hf_architecture"], backend, f["ep"]))
    if f["moe"] and f["ep"] > 1:
        want = {"flex": ("deepep", "hybridep"), "allgather": ("torch",)}[f["dispatcher"]]
        if kv["model.backend.dispatcher"] not in want:
            raise Reject("model.backend.dispatcher %r for the %s dispatcher" % (kv["model.backend.dispatcher"],
                                                                                f["dispatcher"]))


def check_torchrun_launch(f, args, torchrun, contracts):
    ns = parse(torchrun.parse_args, args)
    expect("torchrun --nnodes", str(ns.nnodes), str(f["nodes"]))
    expect("torchrun --nproc_per_node", str(ns.nproc_per_node), str(f["gpus_per_node"]))
    expect("torchrun --rdzv_endpoint", ns.rdzv_endpoint, f["master"])
    expect("torchrun --rdzv_id", ns.rdzv_id, f["job_id"])
    script, rest = ns.training_script, ns.training_script_args
    fw, version = f["framework"], f["version"]
    if fw == "megatron":
        expect("script", os.path.basename(script), "pretrain_gpt.py")
        check_megatron(f, parse(parsers.parse_megatron, contracts, version, rest))
    elif fw == "deepspeed" and version == "megatron-deepspeed":
        expect("script", os.path.basename(script), "pretrain_gpt.py")
        ns2 = parse(parsers.parse_megatron_deepspeed, contracts, rest)
        expect("--tensor-model-parallel-size", ns2.tensor_model_parallel_size, f["tp"])
        expect("--pipeline-model-parallel-size", ns2.pipeline_model_parallel_size, f["pp"])
        expect("--deepspeed", ns2.deepspeed, True)
        check_json_file(ns2.deepspeed_config, f, contracts)
    elif fw in ("deepspeed", "fsdp"):
        expect("script arguments", len(rest), 1)
        check_json_file(rest[0], f, contracts)
    elif fw == "torchtitan":
        expect("torchrun -m", bool(ns.module), True)
        expect("module", script, "torchtitan.train")
        check_torchtitan(f, rest, contracts)
    elif fw == "automodel":
        expect("torchrun -m", bool(ns.module), True)
        expect("module", script, "nemo_automodel.recipes.llm.train_ft")
        check_automodel(f, rest, contracts)
    else:
        raise Reject("no launch check for framework %s" % fw)


def check_case(case_dir, contracts, torchrun):
    with open(os.path.join(case_dir, "case.json")) as fh:
        f = json.load(fh)
    with open(os.path.join(case_dir, "argv"), "rb") as fh:
        argv = [a.decode() for a in fh.read().split(b"\0")[:-1]]
    if not argv:
        raise Reject("the launch delivered no argv")
    prog, args = os.path.basename(argv[0]), argv[1:]
    if f["framework"] == "nemo":
        expect("program", prog, "nemo")
        check_nemo(f, parse(parsers.parse_nemo, contracts, args))
    else:
        expect("program", prog, "torchrun")
        check_torchrun_launch(f, args, torchrun, contracts)
    return f


def negative_controls(contracts):
    """The rebuilt checks must bite: the forms that broke launches are refused."""
    problems = []
    for bad in ['"([0]*3+[1]*58)"', "([0]*3+[1]*58"]:
        try:
            parsers.parse_megatron(contracts, "core_v0.15", ["--moe-layer-freq", bad])
            problems.append("negative control: --moe-layer-freq %s was accepted" % bad)
        except Reject:
            pass
    try:
        parsers.parse_megatron(contracts, "core_v0.15", ["--pipeline-model-parallel-size", "2",
                                                         "--pipeline-model-parallel-layout", '"Et|tL"'])
        problems.append("negative control: a quoted pipeline layout was accepted")
    except Reject:
        pass
    # 80 layers, pp 4, Interleaved1F1B with pipeline_parallel_layers_per_stage = 80 / 8: torchtitan counts
    # ceil((80 + 1 + 1) / 10) = 9 stages, not divisible by 4, and refuses; the default (2 a rank) is accepted.
    for version in ("v0.2", "main"):
        bad_tt = {"version": version, "pp": 4, "vpp": 2, "layers": 80, "first_stage_layers": 0,
                  "last_stage_layers": 0}
        try:
            check_torchtitan_split(bad_tt, lambda key, default: {"pipeline_parallel_schedule": "Interleaved1F1B",
                                                                 "pipeline_parallel_layers_per_stage": 10}.get(key, default))
            problems.append("negative control: torchtitan %s accepted 9 stages over pp 4" % version)
        except (Reject, ValueError):
            pass
        try:
            check_torchtitan_split(bad_tt, lambda key, default: {
                "pipeline_parallel_schedule": "Interleaved1F1B"}.get(key, default))
        except (Reject, ValueError) as e:
            problems.append("positive control: torchtitan %s refused its default interleaved split: %s" % (version, e))
    # AutoModel: a key its recipe does not read, a strategy field of another strategy and a stage count pp does
    # not divide are refused; the plain form is accepted.
    for bad in (["--config", "r.yaml", "--distributed.tensor_parallel_size=2"],
                ["--config", "r.yaml", "--distributed.strategy=ddp", "--distributed.sequence_parallel=true"],
                ["--distributed.tp_size=2"]):
        try:
            parsers.parse_automodel(contracts, bad)
            problems.append("negative control: AutoModel accepted %s" % bad)
        except Reject:
            pass
    try:
        automodel_stage_code("v0.5.0").calculate_virtual_stages(80, 10, 4, False, None)  # 8 stages: fine
        automodel_stage_code("v0.5.0").calculate_virtual_stages(80, 9, 4, False, None)   # 9 stages over pp 4
        problems.append("negative control: AutoModel's stage count accepted 9 stages over pp 4")
    except ValueError:
        pass
    cfg, kv = parsers.parse_automodel(contracts, ["-c", "r.yaml", "--distributed.tp_size", "2",
                                                  "--distributed.sequence_parallel"])
    if (cfg, kv) != ("r.yaml", {"distributed.tp_size": 2, "distributed.sequence_parallel": True}):
        problems.append("positive control: AutoModel's three override forms gave %r" % ((cfg, kv),))
    # A ZeRO-1 scope of 4 of 64 ranks is 16 instances: arguments without the option would launch one.
    scope = {"zero_stage": 1, "dp": 64, "cp": 1, "shard_group": 4}
    plain = parsers.parse_megatron(contracts, "core_v0.15", ["--use-distributed-optimizer"])
    if (plain.num_distributed_optimizer_instances or 1) == optimizer_instances(scope):
        problems.append("negative control: a ZeRO-1 scope without --num-distributed-optimizer-instances passed")
    scoped = parsers.parse_megatron(contracts, "core_v0.15", ["--use-distributed-optimizer",
                                                             "--num-distributed-optimizer-instances=16"])
    if scoped.num_distributed_optimizer_instances != optimizer_instances(scope):
        problems.append("positive control: --num-distributed-optimizer-instances=16 gave %r"
                        % scoped.num_distributed_optimizer_instances)
    ok = parsers.parse_megatron(contracts, "core_v0.15", ["--moe-layer-freq", "([0]*3+[1]*58)"])
    if ok.moe_layer_freq != [0] * 3 + [1] * 58:
        problems.append("positive control: --moe-layer-freq ([0]*3+[1]*58) gave %r" % ok.moe_layer_freq)
    return problems


def main():
    cases_dir, contracts = sys.argv[1], sys.argv[2]
    torchrun, torchrun_source = parsers.torchrun_parser(contracts)
    print("torchrun parser: " + torchrun_source)
    failures = negative_controls(contracts)
    checked = {}
    for name in sorted(os.listdir(cases_dir)):
        d = os.path.join(cases_dir, name)
        if not os.path.isdir(d):
            continue
        try:
            f = check_case(d, contracts, torchrun)
            key = "%s %s" % (f["framework"], f["version"])
            checked[key] = checked.get(key, 0) + 1
        except (Reject, KeyError, ValueError, OSError) as e:
            failures.append("%s: %s: %s" % (name, type(e).__name__, e))
    for key in sorted(checked):
        print("checked %3d launches of %s" % (checked[key], key))
    for line in failures:
        print("FAIL " + line)
    print("%d launches checked, %d failures" % (sum(checked.values()), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
