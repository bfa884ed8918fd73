#!/usr/bin/env python3
"""Extract the launch contract of each supported framework version from its own source (stdlib only).

    scripts/contracts/extract.py --mirrors DIR [--torch-root DIR] [--pytorch-files DIR] [--only NAME] [-o DIR]

For every entry of VERSIONS below the source is read at a pinned commit — from a bare git mirror
(DIR/<owner>+<repo>/repo, as the project's fetch tool lays them out) or, for PyTorch, from a plain tree
(Debian's python3-torch installs the 1.13.1 source under /usr/lib/python3/dist-packages; files of a newer
PyTorch commit may be laid out under --pytorch-files). Nothing is imported: argparse definitions, dataclass
fields, function signatures, enum members, NCCL_PARAM macros and the asserts that decide whether a launch
fails are read from the syntax tree. The result, one JSON file per version under tests/contracts/, is committed
as test data; the GoogleTest contract tests (tests/contracts/contract_test.cpp) check paratune's emitted flags,
keys and variables against it and check that the rules the tests transcribe are still the source's.

Re-run after changing VERSIONS; `git diff tests/contracts` then shows what the new version changed.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pysource import (Source, argparse_arguments, assert_statements, dataclass_fields, enum_members,  # noqa: E402
                      find_rule, function_params, identifier_files, literal)
import ast  # noqa: E402

# framework, version id (paratune's framework_version), repository, mirror name, git ref (tag or commit)
VERSIONS = [
    ("megatron", "core_v0.14", "github:NVIDIA/Megatron-LM", "NVIDIA+Megatron-LM", "core_v0.14.0"),
    ("megatron", "core_v0.15", "github:NVIDIA/Megatron-LM", "NVIDIA+Megatron-LM", "core_v0.15.3"),
    ("megatron", "main", "github:NVIDIA/Megatron-LM", "NVIDIA+Megatron-LM", "d98e8a64ddf34856e74b24714e3bedb2f5a39553"),
    ("megatron-deepspeed", "main", "github:deepspeedai/Megatron-DeepSpeed", "deepspeedai+Megatron-DeepSpeed", "HEAD"),
    ("nemo", "2.4", "github:NVIDIA/NeMo", "NVIDIA+NeMo", "v2.4.0"),
    ("deepspeed", "0.16", "github:deepspeedai/DeepSpeed", "deepspeedai+DeepSpeed", "v0.16.9"),
    ("deepspeed", "0.19", "github:deepspeedai/DeepSpeed", "deepspeedai+DeepSpeed", "v0.19.5"),
    ("torchtitan", "v0.2", "github:pytorch/torchtitan", "pytorch+torchtitan", "v0.2.2"),
    ("torchtitan", "main", "github:pytorch/torchtitan", "pytorch+torchtitan", "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"),
    ("pytorch", "1.13", "debian:python3-torch 1.13.1+dfsg-4", None, "1.13.1"),
    ("pytorch", "2.x", "github:pytorch/pytorch", None, None),  # files from --pytorch-files (commits in its MANIFEST)
    ("nccl", "2.21", "github:NVIDIA/nccl", "NVIDIA+nccl", "v2.21.5-1"),
    ("nccl", "2.27", "github:NVIDIA/nccl", "NVIDIA+nccl", "v2.27.3-1"),
    ("nccl", "2.30", "github:NVIDIA/nccl", "NVIDIA+nccl", "v2.30.7-1"),
    ("aws-ofi-nccl", "1.21", "github:aws/aws-ofi-nccl", "aws+aws-ofi-nccl", "v1.21.1"),
    ("automodel", "v0.5.0", "github:NVIDIA-NeMo/Automodel", "NVIDIA-NeMo+Automodel", "v0.5.0"),
]
# NeMo 2 recipes run on Megatron-Core; the one paired with NeMo 2.4 (its 25.07 container generation).
NEMO_MCORE = ("NVIDIA+Megatron-LM", "core_v0.14.0")

# The validation rules that make a launch fail, located by what they say (a regular expression over the
# assert's test and message); the contract tests transcribe each one and check it is still found.
MEGATRON_RULES = {
    "megatron_fsdp_needs_fsdp_dtensor": r"ckpt_format\s*==\s*'fsdp_dtensor'.*(Megatron.FSDP|Megatron FSDP)",
    "megatron_fsdp_needs_cuda_max_connections_not_1": (r"CUDA_DEVICE_MAX_CONNECTIONS'\)\s*!=\s*'1'",
                                                       r"^args\.use_megatron_fsdp$"),
    "tp_cp_needs_cuda_max_connections_1": r"CUDA_DEVICE_MAX_CONNECTIONS'\)\s*==\s*'1'.*tensor model parallelism or context",
    "tp_comm_overlap_needs_sequence_parallel": r"args\.sequence_parallel\s*==\s*True.*communication/GEMM overlap",
    "layers_divisible_by_pipeline": r"num_layers\s*%\s*args\.transformer_pipeline_model_parallel_size\s*==\s*0",
    "one_virtual_pipeline_option": r"No more than one of the following arguments",
    # Megatron-LM #5115 (2026-06-03): TE's fused cross entropy refused "due to stability issues".
    "te_cross_entropy_rejected": r"cross_entropy_fusion_impl\s*==\s*'te'.*cross entropy loss fusion is disabled",
    # Mixture of experts: Megatron-Core's TransformerConfig asserts for --overlap-moe-expert-parallel-comm.
    "moe_a2a_overlap_needs_ep": r"expert_model_parallel_size\s*>\s*1.*only supported with expert model parallelism",
    "moe_a2a_overlap_needs_alltoall_or_flex": r"moe_token_dispatcher_type in \[.*'alltoall'.*'flex'",
    "moe_a2a_overlap_no_full_recompute": r"recompute_granularity\s*!=\s*'full'.*overlap_moe_expert_parallel_comm",
    "moe_a2a_overlap_needs_vpp_with_pp": r"virtual_pipeline_model_parallel_size is not None.*EP A2A overlap",
    "moe_a2a_overlap_one_mtp_layer": r"mtp_num_layers is None or self\.mtp_num_layers == 1",
}


def git_commit(git_dir, ref):
    return subprocess.run(["git", "--git-dir", git_dir, "rev-parse", ref + "^{commit}"], check=True,
                          capture_output=True, text=True).stdout.strip()


def rules(src, paths, table):
    stmts = []
    for p in paths:
        stmts += assert_statements(src, p)
    out = {}
    for rid, pattern in table.items():
        s = find_rule(stmts, pattern)
        out[rid] = ({k: s[k] for k in ("file", "line", "test", "message", "within") if k in s} if s else None)
    return out


def factory_arguments(src, path):
    """Arguments that ArgumentGroupFactory(Config, exclude=[...]) generates from a dataclass (Megatron main)."""
    out = {}
    tree = src.tree(path)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ArgumentGroupFactory" and node.args):
            continue
        cls = node.args[0].id if isinstance(node.args[0], ast.Name) else None
        excl = set()
        for k in node.keywords:
            if k.arg == "exclude":
                v = literal(k.value)
                excl = set(v) if v else set()
                if isinstance(k.value, ast.Name):  # exclude=some_list assigned above
                    for a in ast.walk(tree):
                        if isinstance(a, ast.Assign) and getattr(a.targets[0], "id", None) == k.value.id:
                            excl |= set(literal(a.value) or [])
        for name, f in dataclass_fields(src, path, cls).items():
            if name in excl or not f["init"]:
                continue
            meta = f.get("argparse_meta") or {}
            t = f["type"]
            rec = {"dest": meta.get("dest", name), "from": cls, "file": f["file"], "line": f["line"]}
            # As the factory does: the annotation gives the action or type, then argparse_meta overrides (its
            # arg_names rename a bool flag without changing its store_true/store_false action).
            if t == "bool" and f["default"] is True:
                names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
                rec["action"] = "store_false"
            else:
                names = ["--" + name.replace("_", "-")]
                if t == "bool":
                    rec["action"] = "store_true"
                else:
                    rec["type"] = t
            if "arg_names" in meta and isinstance(meta["arg_names"], list):
                names = meta["arg_names"]
            for key in ("action", "type", "nargs"):
                if isinstance(meta.get(key), str):
                    rec[key] = meta[key]
                    if key == "type":
                        rec.pop("action", None)
            choices = meta.get("choices") if isinstance(meta.get("choices"), list) else f.get("choices")
            if choices is None and re.fullmatch(r"[A-Z]\w*", t.replace("Optional[", "").rstrip("]")):
                members = enum_members(src, f["file"], t.replace("Optional[", "").rstrip("]"))
                if members:
                    choices = members
            if choices is not None:
                rec["choices"] = choices
            for n in names:
                out[n] = dict(rec, names=names)
    return out


def megatron(src):
    path = "megatron/training/arguments.py"
    args = argparse_arguments(src, path, enums_from=path)
    args.update({k: v for k, v in factory_arguments(src, path).items() if k not in args})
    # Who reads each argument: files outside arguments.py (and outside the legacy model) naming its dest.
    modern = identifier_files(src, "megatron/", exclude={path} | {p for p in src.files() if "/legacy/" in p})
    own = path_text = src.read(path)
    for a in args.values():
        if "from" in a:
            a["readers"] = "config field"
        else:  # other files naming the dest, plus arguments.py itself when its checks read args.<dest>
            a["readers"] = modern.get(a["dest"], 0) + (1 if re.search(r"args\." + a["dest"] + r"\b", own) else 0)
    del path_text
    return {"arguments": args,
            "rules": rules(src, [path, "megatron/core/transformer/transformer_config.py"], MEGATRON_RULES)}


def megatron_deepspeed(src):
    path = "megatron/arguments.py"
    args = argparse_arguments(src, path)
    modern = identifier_files(src, "megatron/", exclude={path})
    for a in args.values():
        a["readers"] = modern.get(a["dest"], 0)
    # DeepSpeed's own launcher arguments (--deepspeed, --deepspeed_config) come from deepspeed.add_config_arguments.
    return {"arguments": args}


def nemo(src, mcore):
    strategy = function_params(src, "nemo/lightning/pytorch/strategies/megatron_strategy.py", "__init__",
                               "MegatronStrategy")
    precision = function_params(src, "nemo/lightning/pytorch/plugins/mixed_precision.py", "__init__",
                                "MegatronMixedPrecision")
    data = function_params(src, "nemo/collections/llm/gpt/data/mock.py", "__init__", "MockDataModule")
    pretrain_data = function_params(src, "nemo/collections/llm/gpt/data/pre_training.py", "__init__",
                                    "PreTrainingDataModule")
    tconf = dataclass_fields(mcore, "megatron/core/transformer/transformer_config.py", "TransformerConfig")
    ddp = dataclass_fields(mcore, "megatron/core/distributed/distributed_data_parallel_config.py",
                           "DistributedDataParallelConfig")
    optim = dataclass_fields(mcore, "megatron/core/optimizer/optimizer_config.py", "OptimizerConfig")
    keys = {}
    for prefix, params in (("trainer.strategy.", strategy["params"]), ("trainer.plugins.", precision["params"]),
                           ("data.", data["params"])):
        for k, v in params.items():
            keys[prefix + k] = {"type": v["type"]}
    for k, v in pretrain_data["params"].items():
        keys.setdefault("data." + k, {"type": v["type"]})
    for k, v in tconf.items():
        keys["model.config." + k] = {"type": v["type"], **({"choices": v["choices"]} if "choices" in v else {})}
    # The recipe's model config is NeMo's GPTConfig(TransformerConfig): its own fields (seq_length, ...) too.
    for k, v in dataclass_fields(src, "nemo/collections/llm/gpt/model/base.py", "GPTConfig").items():
        keys.setdefault("model.config." + k, {"type": v["type"]})
    for k, v in ddp.items():
        keys["trainer.strategy.ddp." + k] = {"type": v["type"], **({"choices": v["choices"]} if "choices" in v else {})}
    for k, v in optim.items():
        keys["optim.config." + k] = {"type": v["type"]}
    strategy_src = src.read("nemo/lightning/pytorch/strategies/megatron_strategy.py")
    fsdp_values = sorted(set(re.findall(r'fsdp == "(\w+)"', strategy_src)))
    stmts = []
    for p in ("megatron/core/transformer/transformer_config.py", "megatron/core/transformer/transformer_block.py",
              "megatron/core/model_parallel_config.py"):
        stmts += assert_statements(mcore, p)
    mcore_rules = {
        "uneven_pipeline_split_needs_accounting": r"num_layers\s*%\s*config\.pipeline_model_parallel_size\s*==\s*0",
    }
    found = {}
    for rid, pat in mcore_rules.items():
        s = find_rule(stmts, pat)
        found[rid] = {k: s[k] for k in ("file", "line", "test", "message", "raise", "within") if k in s} if s else None
    return {"config_keys": keys, "strategy_fsdp_values": fsdp_values, "rules": found,
            "megatron_core": {"repository": "github:NVIDIA/Megatron-LM", "commit": mcore.commit, "ref": mcore.ref}}


def pydantic_keys(src, path, cls):
    fields = dataclass_fields(src, path, cls)
    keys = {}
    for name, f in fields.items():
        keys[f.get("alias") or name] = {"type": f["type"]}
        if f.get("alias"):
            keys[name] = {"type": f["type"], "alias_of": f["alias"]}
    return keys


def string_constants(src, path):
    out = {}
    for node in src.tree(path).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper():
            v = literal(node.value)
            if isinstance(v, str) and re.fullmatch(r"[a-z][a-z0-9_]*", v):
                out[node.targets[0].id] = v
    return out


def deepspeed(src):
    top = set(string_constants(src, "deepspeed/runtime/constants.py").values())
    for extra in ("deepspeed/runtime/zero/constants.py", "deepspeed/runtime/zero/config.py"):
        if src.exists(extra):  # ZERO_OPTIMIZATION = "zero_optimization" lives with the ZeRO config
            top |= {v for k, v in string_constants(src, extra).items() if k == "ZERO_OPTIMIZATION"}
    if "activation_checkpointing" in string_constants(src, "deepspeed/runtime/activation_checkpointing/config.py").values():
        top.add("activation_checkpointing")
    zero = pydantic_keys(src, "deepspeed/runtime/zero/config.py", "DeepSpeedZeroConfig")
    prec = {}
    if src.exists("deepspeed/runtime/precision_config.py"):
        prec["bf16"] = pydantic_keys(src, "deepspeed/runtime/precision_config.py", "DeepSpeedBF16Config")
        prec["fp16"] = pydantic_keys(src, "deepspeed/runtime/precision_config.py", "DeepSpeedFP16Config")
    else:
        consts = string_constants(src, "deepspeed/runtime/constants.py")
        prec["bf16"] = {v: {} for k, v in consts.items() if k.startswith("BFLOAT16") or k.startswith("BF16")}
        prec["fp16"] = {v: {} for k, v in consts.items() if k.startswith("FP16")}
    ac = set(string_constants(src, "deepspeed/runtime/activation_checkpointing/config.py").values())
    cfg_rules = rules(src, ["deepspeed/runtime/config.py"], {
        "batch_equals_micro_times_accum_times_world":
            r"train_batch\s*==\s*micro_batch\s*\*\s*grad_acc\s*\*\s*self\.world_size"})
    eng_rules = rules(src, ["deepspeed/runtime/engine.py"], {
        "autotp_rejects_zero3": r"autotp.*zero_stage = 3|zero_optimization_stage\(\s*\)\s*<=\s*2"})
    config_src = src.read("deepspeed/runtime/config.py")
    world = re.findall(r"self\.world_size = (mpu\.get_data_parallel_world_size\(\))", config_src)
    launcher = argparse_arguments(src, "deepspeed/__init__.py")  # deepspeed.add_config_arguments
    return {"top_level_keys": sorted(top), "launcher_arguments": launcher, "zero_optimization": zero, "precision": prec,
            "activation_checkpointing": sorted(ac), "rules": {**cfg_rules, **eng_rules},
            "world_size_with_mpu": world[0] if world else None}


def torchtitan(src, version):
    if src.exists("torchtitan/config/job_config.py"):  # v0.2.x: TOML sections = JobConfig dataclass fields
        path = "torchtitan/config/job_config.py"
        job = dataclass_fields(src, path, "JobConfig")
        sections = {}
        for sec, f in job.items():
            cls = f["type"]
            fields = dataclass_fields(src, path, cls)
            if fields:
                sections[sec] = {k: {"type": v["type"], **({"choices": v["choices"]} if "choices" in v else {})}
                                 for k, v in fields.items()}
        stmts = []
        for p in src.files():
            if p.startswith("torchtitan/") and p.endswith(".py") and "experiments" not in p:
                try:
                    stmts += assert_statements(src, p)
                except SyntaxError:
                    pass
        table = {
            "async_tp_needs_compile": r"Async TP requires .*compile|async.*tensor.*parallel.*compile",
            "ddp_only_1d": r"DDP has not supported > 1D parallelism",
            "replicate_needs_shard_or_ddp": r"data_parallel_replicate_degree.*data_parallel_shard_degree",
        }
        found = {}
        for rid, pat in table.items():
            s = find_rule(stmts, pat)
            found[rid] = {k: s[k] for k in ("file", "line", "test", "message", "raise", "within") if k in s} if s else None
        converters = sorted(set(re.findall(r'register_model_converter\(\s*\w+,\s*"([\w.]+)"',
                                           "\n".join(src.read(p) for p in src.files()
                                                     if p.startswith("torchtitan/components/") and p.endswith(".py")))))
        return {"format": "toml", "sections": sections, "rules": found, "model_converters": converters}
    # main: Python config functions; the frozen --section.option CLI is listed by its own test.
    frozen = None
    for node in ast.walk(src.tree("tests/unit_tests/test_no_new_cli_options.py")):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_FROZEN_CLI_OPTIONS":
            frozen = sorted(literal(node.value.args[0]))
    configs = "torchtitan/config/configs.py"
    sections = {}
    for sec, cls in (("training", "TrainingConfig"), ("parallelism", "ParallelismConfig"),
                     ("compile", "CompileConfig")):
        sections[sec] = {k: {"type": v["type"], **({"choices": v["choices"]} if "choices" in v else {})}
                         for k, v in dataclass_fields(src, configs, cls).items()}
    trainer = src.read("torchtitan/trainer.py")
    return {"format": "cli", "cli_options": frozen, "sections": sections,
            "activation_checkpoint_subcommands": re.findall(r'tyro\.conf\.subcommand\("([\w-]+)"\)',
                                                            src.read("torchtitan/distributed/activation_checkpoint.py")),
            "raises_in_trainer_config": re.findall(r'raise ValueError\(\s*"([^"]+)"', trainer)}


def pytorch(src):
    out = {}
    run = "torch/distributed/run.py"
    if src.exists(run):
        out["torchrun_arguments"] = argparse_arguments(src, run)
    fsdp1 = "torch/distributed/fsdp/fully_sharded_data_parallel.py"
    if src.exists(fsdp1):
        init = function_params(src, fsdp1, "__init__", "FullyShardedDataParallel")
        api = "torch/distributed/fsdp/api.py" if src.exists("torch/distributed/fsdp/api.py") else fsdp1
        out["FullyShardedDataParallel"] = {
            "params": init["params"],
            "ShardingStrategy": enum_members(src, api, "ShardingStrategy"),
            "BackwardPrefetch": enum_members(src, api, "BackwardPrefetch"),
            "MixedPrecision": sorted(dataclass_fields(src, api, "MixedPrecision")),
        }
    fsdp2 = "torch/distributed/fsdp/_fully_shard/_fully_shard.py"
    if src.exists(fsdp2):
        fs = function_params(src, fsdp2, "fully_shard")
        api2 = "torch/distributed/fsdp/_fully_shard/_fsdp_api.py"
        out["fully_shard"] = {"params": fs["params"],
                              "MixedPrecisionPolicy": sorted(dataclass_fields(src, api2, "MixedPrecisionPolicy"))}
    return out


# NeMo AutoModel's launch-failing checks, located by what they say.
AUTOMODEL_RULES = {
    "moe_no_tensor_parallel": r"Tensor parallelism not supported for custom MoE models",
    "ddp_sizes_one": r"does not support \{feature_name\}",
    "selective_ac_fsdp2_only": r"selective activation checkpointing is supported only for FSDP2",
    "ep_divides_non_pp": r"must be a multiple of.*ep_size",
    "replicate_below_dp": r"dp_replicate_size=\{dp_replicate_size\} must be less than dp_size",
    "pp_microbatches_cover_stages": r"pp_batch_size // pp_microbatch_size >= self\.mesh_context\.pp_size",
    "virtual_stages_divisible": r"must be divisible by.*pipeline parallel size",
    "multi_stage_two_per_rank": r"Multi-stage schedule requires at least 2 stages per rank",
}


def automodel(src):
    """The recipe overrides (--dotted.key=value) a train_ft run reads: distributed.* (recipes/_dist_utils.py
    parse_distributed_section: the sizes, strategy, pipeline.*, moe.*, activation_checkpointing, the strategy
    dataclass's own fields), step_scheduler.* and model.backend.* (BackendConfig)."""
    dist_utils = "nemo_automodel/recipes/_dist_utils.py"
    config = "nemo_automodel/components/distributed/config.py"
    keys = {}
    sizes = None
    for node in src.tree(dist_utils).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if getattr(target, "id", "") == "_PARALLELISM_DEFAULTS":
                sizes = literal(node.value)
    for k, default in sizes.items():
        keys["distributed." + k] = {"type": "int", "default": default}
    strategies = None
    for node in src.tree(config).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if getattr(target, "id", "") == "_STRATEGY_MAP":
                strategies = {literal(k): v.id for k, v in zip(node.value.keys, node.value.values)}
    keys["distributed.strategy"] = {"type": "str", "choices": sorted(strategies)}
    # activation_checkpointing: the spellings _normalize_activation_checkpointing accepts (bool or these strings).
    ac = set()
    for node in ast.walk(src.tree(dist_utils)):
        if isinstance(node, ast.FunctionDef) and node.name == "_normalize_activation_checkpointing":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Set):
                    ac |= set(literal(sub) or [])
                elif isinstance(sub, ast.Compare) and isinstance(sub.comparators[0], ast.Constant) and \
                        isinstance(sub.comparators[0].value, str):
                    ac.add(sub.comparators[0].value)
    keys["distributed.activation_checkpointing"] = {"type": "bool | str", "choices": sorted(ac | {"True", "False"})}
    # Strategy kwargs: fields of the chosen strategy's dataclass (unknown ones raise in _resolve_strategy_config).
    strategy_fields = {}
    for name, cls in strategies.items():
        strategy_fields[name] = sorted(dataclass_fields(src, config, cls))
    for cls in sorted(set(strategies.values())):
        for k, v in dataclass_fields(src, config, cls).items():
            keys.setdefault("distributed." + k, {"type": v["type"], "strategies": []})
            keys["distributed." + k].setdefault("strategies", []).append(cls)
    for k, v in dataclass_fields(src, "nemo_automodel/components/distributed/pipelining/config.py",
                                 "PipelineConfig").items():
        keys["distributed.pipeline." + k] = {"type": v["type"], **({"choices": v["choices"]} if "choices" in v else {})}
    for k, v in dataclass_fields(src, config, "MoEParallelizerConfig").items():
        keys["distributed.moe." + k] = {"type": v["type"]}
    sched = "nemo_automodel/components/training/step_scheduler.py"
    for k, v in dataclass_fields(src, sched, "StepSchedulerConfig").items():
        keys["step_scheduler." + k] = {"type": v["type"]}
    # The recipe reads some step_scheduler keys itself (cfg.get("step_scheduler.local_batch_size", 1), ...).
    recipe = src.read("nemo_automodel/recipes/llm/train_ft.py")
    for k in sorted(set(re.findall(r'cfg\.get\("(step_scheduler\.\w+)"', recipe))):
        keys.setdefault(k, {"type": "read by recipes/llm/train_ft.py"})
    # The recipe's whole-model torch.compile section (train_ft.py: cfg.get("compile", None) -> build_compile_config).
    if 'cfg.get("compile", None)' in recipe:
        for k, v in dataclass_fields(src, "nemo_automodel/components/utils/compile_utils.py", "CompileConfig").items():
            keys["compile." + k] = {"type": v["type"]}
    backend = "nemo_automodel/components/models/common/utils.py"
    for k, v in dataclass_fields(src, backend, "BackendConfig").items():
        keys["model.backend." + k] = {"type": v["type"], **({"choices": v["choices"]} if "choices" in v else {})}
    stmts = []
    for p in (dist_utils, "nemo_automodel/components/distributed/mesh_utils.py",
              "nemo_automodel/components/moe/parallelizer.py", "nemo_automodel/recipes/llm/train_ft.py",
              "nemo_automodel/components/distributed/pipelining/functional.py"):
        stmts += assert_statements(src, p)
    found = {}
    for rid, pat in AUTOMODEL_RULES.items():
        r = find_rule(stmts, pat)
        found[rid] = {k: r[k] for k in ("file", "line", "test", "message", "raise", "within") if k in r} if r else None
    # The architectures AutoModel builds with its own model code (_transformers/registry.py MODEL_ARCH_MAPPING):
    # only these take model.backend.* and, for MoE, ep_size > 1; any other goes to HF from_config.
    custom = None
    for node in src.tree("nemo_automodel/_transformers/registry.py").body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MODEL_ARCH_MAPPING":
            custom = sorted(literal(e.elts[0]) for e in node.value.args[0].elts)
    return {"format": "overrides", "config_keys": keys, "strategy_fields": strategy_fields, "rules": found,
            "custom_architectures": {"file": "nemo_automodel/_transformers/registry.py", "names": custom},
            "cli_parser": {"file": "nemo_automodel/components/config/_arg_parser.py",
                           "forms": re.findall(r"# case (\w\)[^\n]*)", src.read(
                               "nemo_automodel/components/config/_arg_parser.py"))}}


NCCL_PARAM = re.compile(r"NCCL_PARAM\(\s*\w+\s*,\s*\"([A-Z0-9_]+)\"")
NCCL_GETENV = re.compile(r"(?:ncclGetEnv|getenv|ncclGetEnvInt)\(\s*\"(NCCL_[A-Z0-9_]+)\"")
NCCL_LEVEL = re.compile(r"ncclTopoUserGdrLevel|\"(NCCL_NET_GDR_LEVEL)\"|\"(NCCL_P2P_LEVEL)\"")


def nccl(src):
    params, env = set(), set()
    for p in src.files():
        if p.startswith("src/") and p.endswith((".cc", ".h", ".cu", ".cpp")):
            text = src.read(p)
            params.update("NCCL_" + m for m in NCCL_PARAM.findall(text))
            env.update(NCCL_GETENV.findall(text))
            for m in NCCL_LEVEL.findall(text):
                env.update(x for x in m if x)
    topo = src.read("src/graph/topo.cc") if src.exists("src/graph/topo.cc") else ""
    m = re.search(r"topoPathTypeStr\[\]\s*=\s*\{([^}]*)\}", topo)
    paths = re.findall(r"\"(\w+)\"", m.group(1)) if m else []
    return {"variables": sorted(params | env), "params_macro": sorted(params), "path_types": paths}


def aws_ofi_nccl(src):
    text = "\n".join(src.read(p) for p in src.files() if p.endswith((".h", ".c", ".cpp", ".cc"))
                     and (p.startswith("include/") or p.startswith("src/")))
    params = sorted(set(re.findall(r"OFI_NCCL_PARAM\w*\(\s*\w+\s*,\s*(\w+)", text)))
    names = sorted(set(re.findall(r"\.name\s*=\s*\"([^\"]+)\"", text)) | set(re.findall(r"\"(Libfabric|AWS Libfabric)\"", text)))
    fi_env = sorted(set(re.findall(r"\"(FI_[A-Z0-9_]+)\"", text)))
    return {"params": ["OFI_NCCL_" + p for p in params], "net_plugin_names": names, "fi_variables_set_or_read": fi_env}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # No default directory: where the mirrors lie is this machine's business (PARATUNE_MIRRORS or --mirrors).
    ap.add_argument("--mirrors", default=os.environ.get("PARATUNE_MIRRORS"),
                    help="directory of bare git mirrors, DIR/<owner>+<repo>/repo (default: $PARATUNE_MIRRORS)")
    ap.add_argument("--torch-root", default="/usr/lib/python3/dist-packages")
    ap.add_argument("--pytorch-files", help="a tree of newer PyTorch files with a MANIFEST.json {path: commit}")
    ap.add_argument("--only", help="one framework")
    ap.add_argument("-o", "--output", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "contracts"))
    a = ap.parse_args()
    if not a.mirrors:
        ap.error("--mirrors DIR (or PARATUNE_MIRRORS) is required: the bare git mirrors of the framework sources")
    os.makedirs(a.output, exist_ok=True)
    for fw, version, repo, mirror, ref in VERSIONS:
        if a.only and a.only != fw:
            continue
        if fw == "pytorch":
            if version == "1.13":
                src = Source(repo, ref, root=a.torch_root, ref="Debian 12 python3-torch (the source it installs)")
            else:
                if not a.pytorch_files:
                    print(f"skip pytorch {version}: no --pytorch-files", file=sys.stderr)
                    continue
                manifest = json.load(open(os.path.join(a.pytorch_files, "MANIFEST.json")))
                src = Source(repo, manifest, root=a.pytorch_files, ref="files at the commits listed")
        else:
            git_dir = os.path.join(a.mirrors, mirror, "repo")
            src = Source(repo, git_commit(git_dir, ref), git_dir=git_dir, ref=ref)
        if fw == "megatron":
            body = megatron(src)
        elif fw == "megatron-deepspeed":
            body = megatron_deepspeed(src)
        elif fw == "nemo":
            g = os.path.join(a.mirrors, NEMO_MCORE[0], "repo")
            body = nemo(src, Source("github:NVIDIA/Megatron-LM", git_commit(g, NEMO_MCORE[1]), git_dir=g,
                                    ref=NEMO_MCORE[1]))
        elif fw == "deepspeed":
            body = deepspeed(src)
        elif fw == "torchtitan":
            body = torchtitan(src, version)
        elif fw == "pytorch":
            body = pytorch(src)
        elif fw == "automodel":
            body = automodel(src)
        elif fw == "nccl":
            body = nccl(src)
        else:
            body = aws_ofi_nccl(src)
        doc = {"framework": fw, "version": version, "source": src.describe(),
               "extracted_by": "scripts/contracts/extract.py", **body}
        name = f"{fw}--{version}.json"
        with open(os.path.join(a.output, name), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{name}: {src.repository} {src.commit if isinstance(src.commit, str) else 'see MANIFEST'}")


if __name__ == "__main__":
    main()
