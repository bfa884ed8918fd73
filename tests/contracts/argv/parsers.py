"""The frameworks' own command-line parsers, rebuilt from the pinned extracts in tests/contracts/*.json.

Each parser takes the argv a launched process receives and either returns what the framework would read or raises
Reject with the framework's reason. What is rebuilt, and from where:

* Megatron-LM (core_v0.14, core_v0.15, main) and Megatron-DeepSpeed: an argparse parser with every argument of the
  extract (names, dest, action, type, choices; lists as nargs='+', as main's ArgumentGroupFactory makes them), with
  allow_abbrev=False and a strict parse, as megatron/training/arguments.py builds it. The value checks behind
  Megatron's custom types are rebuilt from its source at the pinned commits (behaviour, in our own code):
    - moe_freq_type / no_rope_freq_type / la_freq_type: an int, or a string holding '[' that _eval_pattern checks
      against the character set , digits [ ] ( ) + * (anything else: ValueError "Invalid pattern") and evaluates
      as a Python list expression (megatron/training/arguments.py: _eval_pattern, line 277 at core_v0.15.3
      309ffca6, 245 at main d98e8a64; the same function at core_v0.14.0 23e00ed0).
    - --pipeline-model-parallel-layout: validate_args counts its stages with
      PipelineParallelLayerLayout.parse_str_to_list (megatron/core/transformer/pipeline_parallel_layer_layout.py):
      commas dropped, "(...)*n" and "x*n" unrolled, '|' separates stages, every other character one of E L t m.
* NeMo 2 (NeMo-Run's CLI): each override KEY=VALUE as NeMo-Run's PythonicParser splits it, the key one of the
  extract's config keys, the value parsed by its type as NeMo-Run's TypeParser does (surrounding quotes stripped;
  int, float, bool words, Optional's none/null, Literal choices).
* torchtitan main (tyro): --module/--config taken out as its ConfigManager does, then --section.option flags of the
  frozen CLI list, typed from the extract's sections (bools are flags); v0.2: --job.config_file and TOML keys.
* NeMo AutoModel 0.5.0: parse_cli_argv's walk (--config/-c PATH; --key=val, --key val, a bare --flag is True;
  other tokens skipped) and translate_value's reading of each value, rebuilt from components/config/_arg_parser.py
  and loader.py at the pin; every key one the extract lists, with a value among its choices, and the strategy
  fields checked as _resolve_strategy_config does ("Unknown options for strategy").
* torchrun: PyTorch's own parser when Debian's python3-torch is importable, else rebuilt from pytorch--1.13.json.
"""

import argparse
import ast
import enum
import json
import os
import re


class Reject(Exception):
    """The framework would stop at start-up with this message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit 2
        raise Reject(message)


def contract(contracts_dir, name):
    with open(os.path.join(contracts_dir, name + ".json")) as f:
        return json.load(f)


# ---- Megatron's value checks ------------------------------------------------------------------------------------

_PATTERN_CHARS = re.compile(r"[^,\d\[\]\(\)\+\*]")  # what _eval_pattern lets through


def _list_expression(text):
    """Evaluate a list expression made of int lists, + and * (what _eval_pattern's character set admits)."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.List) or isinstance(node, ast.Tuple):
            items = [ev(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = ev(node.left), ev(node.right)
            return left + right if isinstance(node.op, ast.Add) else left * right
        raise ValueError("Invalid pattern: " + text)
    try:
        return ev(ast.parse(text, mode="eval"))
    except SyntaxError as e:
        raise ValueError("Invalid pattern: " + text) from e


def eval_pattern(pattern):
    if _PATTERN_CHARS.search(pattern):
        raise ValueError("Invalid pattern: " + pattern)
    return _list_expression(pattern)


def freq_type(value):
    """moe_freq_type and its siblings: an int, or a list pattern when the string holds '['."""
    return eval_pattern(value) if "[" in value else int(value)


freq_type.__name__ = "moe_freq_type"  # argparse names the type in its message


def layout_stages(layout):
    """The stages of a --pipeline-model-parallel-layout string (each a list of layer letters)."""
    text = layout.replace(",", "")
    text = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    text = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    stages = []
    for stage in text.split("|"):
        for ch in stage:
            if ch not in "ELtm":
                raise Reject("Invalid layer character: %s (stage=%r), known layer characters: E, L, t, m" % (ch, stage))
        stages.append(list(stage))
    return stages


def validate_layer_layout(stages, pp, num_layers, mtp_num_layers, mtp_with_loss):
    """Megatron-Core's checks of a parsed layout (PipelineParallelLayerLayout.__init__ and validate_layer_layout in
    megatron/core/transformer/pipeline_parallel_layer_layout.py at core_v0.14.0, core_v0.15.3 and main d98e8a64):
    the stage count divides by pp; in layer order (the stages as written) the embedding first and the loss last,
    each exactly once, num_layers decoder layers, mtp_num_layers MTP layers, none of them before a decoder layer,
    only in a rank's last stage, and then all of them; with mtp_with_loss (core_v0.15.3 only: core_v0.14.0 asserts
    a one-element tuple there, always true, and main dropped the assert) on the last rank, beside the loss. Counts
    only: an empty stage passes (the pinned docs: "it is legal to have empty stages")."""
    if len(stages) % pp:
        raise Reject("pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size")
    vpp = len(stages) // pp
    flat = [x for stage in stages for x in stage]
    if not flat or flat[0] != "E":
        raise Reject("The first layer must be embedding")
    if flat[-1] != "L":
        raise Reject("The last layer must be loss")
    if flat.count("E") != 1 or flat.count("L") != 1:
        raise Reject("Embedding and loss must be specified exactly once")
    if flat.count("t") != num_layers:
        raise Reject("Number of decoder layers %d must match num_layers %d" % (flat.count("t"), num_layers))
    if flat.count("m") != (mtp_num_layers or 0):
        raise Reject("Number of mtp layers in layout must match mtp_num_layers")
    if "m" in flat and "t" in flat[flat.index("m"):]:
        raise Reject("decoder layers must be placed before MTP layers")
    for rank in range(pp):
        chunks = [stages[v * pp + rank] for v in range(vpp)]
        if any("m" in c for c in chunks[:-1]):
            raise Reject("Currently we restrict that the MTP should be always in the last virtual pipeline stage")
        if "m" in chunks[-1] and chunks[-1].count("m") != mtp_num_layers:
            raise Reject("All of the MTP layers must be in the same stage")
        if "m" in chunks[-1] and mtp_with_loss and (rank != pp - 1 or "L" not in chunks[-1]):
            raise Reject("MTP layers must be in the last stage together with Loss stage.")


_CUSTOM_TYPES = {"moe_freq_type": freq_type, "no_rope_freq_type": freq_type, "la_freq_type": freq_type}


# ---- types from the extract's type strings ----------------------------------------------------------------------

def _unwrap_optional(t):
    t = t.strip()
    m = re.fullmatch(r"Optional\[(.*)\]", t)
    if m:
        return _unwrap_optional(m.group(1))
    if t.endswith("| None"):
        return _unwrap_optional(t[: -len("| None")])
    return t


def _not_rebuilt(type_name):
    def convert(value):
        raise Reject("argument type %s is not rebuilt by this test; extend parsers.py" % type_name)
    convert.not_rebuilt = True
    return convert


def _enum_type(name, choices):
    members = enum.Enum(name, [(c, c) for c in choices])
    def convert(value):
        try:
            return members[value]
        except KeyError:
            raise ValueError(value)
    convert.__name__ = name
    return convert, list(members)


def argparse_kwargs(spec):
    """add_argument() keywords for one extracted argument."""
    action = spec.get("action")
    if action in ("store_true", "store_false"):
        return {"action": action}
    if action == "BooleanOptionalAction":
        return {"action": argparse.BooleanOptionalAction}
    t = spec.get("type")
    choices = spec.get("choices")
    if t is None or t == "None" or t == "str":
        kw = {"type": str}
    elif t in _CUSTOM_TYPES:
        kw = {"type": _CUSTOM_TYPES[t]}
    elif t == "lambda" or (choices and re.fullmatch(r"[A-Z]\w*", _unwrap_optional(t) or "")):
        conv, members = _enum_type(spec["dest"], choices or [])  # an enum looked up by member name
        return {"type": conv, "choices": members}
    else:
        kw = _typed(_unwrap_optional(t), choices)
    if choices is not None and "choices" not in kw:
        kw["choices"] = choices
    if "nargs" in spec and "nargs" not in kw:
        kw["nargs"] = spec["nargs"]  # the source's own count ('*', '+', '?', N): --recompute-modules takes several
    return kw


def _typed(t, choices):
    m = re.fullmatch(r"(?:list|List)\[(.*)\]", t)
    if m:
        inner = _typed(_unwrap_optional(m.group(1)), None)
        inner["nargs"] = "+"
        return inner
    m = re.fullmatch(r"Literal\[(.*)\]", t)
    if m:
        values = ast.literal_eval("[" + m.group(1) + "]")
        return {"type": type(values[0]), "choices": values}
    simple = {"int": int, "float": float, "str": str, "bool": bool}
    if t in simple:
        return {"type": simple[t]}
    return {"type": _not_rebuilt(t)}


def argparse_parser(arguments, prog):
    """A strict parser holding every extracted argument (its names, dest, action, type, choices)."""
    p = _Parser(prog=prog, allow_abbrev=False, add_help=False)
    seen = set()
    for spec in arguments.values():
        names = tuple(spec["names"])
        if names in seen:
            continue  # the extract lists an argument under each of its names
        seen.add(names)
        p.add_argument(*names, dest=spec["dest"], **argparse_kwargs(spec))
    return p


def parse_megatron(contracts_dir, version, argv):
    c = contract(contracts_dir, "megatron--" + version)
    ns = argparse_parser(c["arguments"], "pretrain_gpt.py").parse_args(argv)
    # validate_args: the layout string's stage count must divide by the pipeline size.
    if getattr(ns, "pipeline_model_parallel_layout", None) is not None:
        stages = layout_stages(ns.pipeline_model_parallel_layout)
        if len(stages) % ns.pipeline_model_parallel_size:
            raise Reject("The length of pipeline_model_parallel_layout must be divisible by "
                         "pipeline_model_parallel_size")
    return ns


def parse_megatron_deepspeed(contracts_dir, argv):
    arguments = dict(contract(contracts_dir, "megatron-deepspeed--main")["arguments"])
    arguments.update(contract(contracts_dir, "deepspeed--0.16")["launcher_arguments"])  # deepspeed.add_config_arguments
    return argparse_parser(arguments, "pretrain_gpt.py").parse_args(argv)


# ---- NeMo-Run overrides ------------------------------------------------------------------------------------------

_OVERRIDE = re.compile(r"^([\w\[\]\.]+)\s*(=|\+=|-=|\*=|/=|\|=|&=)\s*(.+)$")


def _nemo_value(value, t):
    t = (t or "Any").strip()
    if value.startswith('"') or value.startswith("'"):
        value = value.strip("\"'") if len(value) >= 2 and value[0] == value[-1] else value
    m = re.fullmatch(r"Optional\[(.*)\]", t)
    if m:
        if value.lower() in ("none", "null"):
            return None
        t = m.group(1)
    m = re.fullmatch(r"Union\[(.*)\]", t)
    if m:
        for part in [x.strip() for x in re.split(r",(?![^\[]*\])", m.group(1))]:
            try:
                return _nemo_value(value, part)
            except Reject:
                continue
        raise Reject("no type of %s accepts %r" % (t, value))
    m = re.fullmatch(r"Literal\[(.*)\]", t)
    if m:
        allowed = ast.literal_eval("[" + m.group(1) + "]")
        if value not in allowed:
            raise Reject("%r is not one of %s" % (value, allowed))
        return value
    try:
        if t == "int":
            return int(value)
        if t == "float":
            return float(value)
    except ValueError:
        raise Reject("%r is not %s" % (value, t))
    if t == "bool":
        if value.lower() in ("true", "yes", "1", "on"):
            return True
        if value.lower() in ("false", "no", "0", "off"):
            return False
        raise Reject("cannot convert %r to bool" % value)
    return value  # str and the types NeMo-Run passes through


# Keys of Lightning's Trainer that the NeMo example sets itself (not in the NeMo config extract).
NEMO_EXAMPLE_KEYS = {"trainer.num_nodes": "int", "trainer.devices": "int"}


def parse_nemo(contracts_dir, argv):
    """`nemo llm pretrain --factory RECIPE --yes KEY=VALUE...`: the overrides, parsed."""
    keys = contract(contracts_dir, "nemo--2.4")["config_keys"]
    if argv[:2] != ["llm", "pretrain"]:
        raise Reject("not `nemo llm pretrain`: %s" % argv[:2])
    rest, out = argv[2:], {}
    while rest:
        a = rest.pop(0)
        if a in ("--factory", "-f"):
            rest.pop(0)
            continue
        if a in ("--yes", "-y"):
            continue
        m = _OVERRIDE.match(a)
        if not m:
            raise Reject("Invalid argument format: %r" % a)
        key, _, value = m.groups()
        if key in keys:
            out[key] = _nemo_value(value, keys[key].get("type"))
        elif key in NEMO_EXAMPLE_KEYS:
            out[key] = _nemo_value(value, NEMO_EXAMPLE_KEYS[key])
        else:
            raise Reject("%s is not a NeMo 2.4 config key" % key)
    return out


# ---- torchtitan --------------------------------------------------------------------------------------------------

def _tyro_kwargs(field):
    t = field.get("type", "str") if field else "str"
    if _unwrap_optional(t) == "bool":
        return None  # a flag
    kw = _typed(_unwrap_optional(t), field.get("choices") if field else None)
    if getattr(kw["type"], "not_rebuilt", False):
        kw = {"type": str}  # types the launch does not set (dataclasses, callables): any text
    return kw


def parse_torchtitan_main(contracts_dir, argv):
    c = contract(contracts_dir, "torchtitan--main")
    rest, module, config = [], None, None
    it = iter(argv)
    for a in it:
        if a == "--module":
            module = next(it)
        elif a.startswith("--module="):
            module = a.split("=", 1)[1]
        elif a == "--config":
            config = next(it)
        elif a.startswith("--config="):
            config = a.split("=", 1)[1]
        else:
            rest.append(a)
    if not module or not config:
        raise Reject("--module and --config are required")
    p = _Parser(prog="torchtitan.train", allow_abbrev=False, add_help=False)
    for option in c["cli_options"]:
        section, _, name = option.rpartition(".")
        field = c["sections"].get(section, {}).get(name)
        kw = _tyro_kwargs(field)
        dest = option.replace(".", "__")
        if kw is None:
            p.add_argument("--" + option, dest=dest, action="store_true", default=None)
            p.add_argument("--%s.no_%s" % (section, name) if section else "--no_" + name, dest=dest,
                           action="store_false")
        else:
            p.add_argument("--" + option, dest=dest, **kw)
    ns = p.parse_args(rest)
    return {k.replace("__", "."): v for k, v in vars(ns).items() if v is not None}


def _toml_type_ok(value, field):
    t = _unwrap_optional(field.get("type", "str"))
    if "choices" in field:
        return value in field["choices"]
    if t == "bool":
        return isinstance(value, bool)
    if t == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if t in ("float", "float | int"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "str":
        return isinstance(value, str)
    if re.fullmatch(r"(?:list|List)\[.*\]", t):
        return isinstance(value, list)
    return True


def parse_torchtitan_v02(contracts_dir, argv):
    """v0.2.x: --job.config_file FILE plus --section.option overrides; the file's keys typed by the extract."""
    import tomllib
    sections = contract(contracts_dir, "torchtitan--v0.2")["sections"]
    p = _Parser(prog="torchtitan.train", allow_abbrev=False, add_help=False)
    for section, fields in sections.items():
        for name, field in fields.items():
            kw = _tyro_kwargs(field)
            if kw is None:
                p.add_argument("--%s.%s" % (section, name), action="store_true", default=None)
            else:
                p.add_argument("--%s.%s" % (section, name), **kw)
    ns = vars(p.parse_args(argv))
    path = ns.get("job.config_file")
    if not path:
        raise Reject("no --job.config_file")
    with open(path, "rb") as f:
        config = tomllib.load(f)
    for section, table in config.items():
        if section not in sections:
            raise Reject("[%s] is not a torchtitan v0.2 section" % section)
        for key, value in table.items():
            field = sections[section].get(key)
            if field is None:
                raise Reject("%s.%s is not a torchtitan v0.2 option" % (section, key))
            if not _toml_type_ok(value, field):
                raise Reject("%s.%s = %r does not have type %s" % (section, key, value, field.get("type")))
    return config


# ---- NeMo AutoModel -----------------------------------------------------------------------------------------------

def _automodel_value(v):
    """loader.py translate_value: None/true/false words, then a Python literal, else the string."""
    special = {"none": None, "None": None, "true": True, "True": True, "false": False, "False": False}
    if v in special:
        return special[v]
    if len(v) > 1000:
        return v
    try:
        return ast.literal_eval(v)
    except Exception:
        return v


def parse_automodel(contracts_dir, argv):
    """(config path, {dotted key: value}) as AutoModel 0.5.0's recipe reads argv; Reject with its reason."""
    c = contract(contracts_dir, "automodel--v0.5.0")
    cfg, kv, i = None, {}, 0
    while i < len(argv):
        tok = argv[i]
        if tok in ("--config", "-c"):
            if i + 1 >= len(argv):
                raise Reject("Expected a path after --config")
            cfg, i = argv[i + 1], i + 2
        elif tok.startswith("--"):
            key = tok.lstrip("-")
            if "=" in key:
                key, val, i = key.split("=", 1) + [i + 1]
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                val, i = argv[i + 1], i + 2
            else:
                val, i = "True", i + 1
            kv[key] = _automodel_value(val)  # set_by_dotted: a later override of the same key wins
        else:
            i += 1
    if not cfg:
        raise Reject("You must specify --config <path>")
    keys = c["config_keys"]
    strategy = str(kv.get("distributed.strategy", "fsdp2")).lower()
    if strategy not in c["strategy_fields"]:
        raise Reject("Unknown strategy: %s" % strategy)
    for key, val in kv.items():
        if key not in keys:
            raise Reject("%s is not a key AutoModel 0.5.0 reads" % key)
        choices = keys[key].get("choices")
        if choices is not None and val is not None and str(val) not in choices:
            raise Reject("%s=%r: not one of %s" % (key, val, choices))
        field = key[len("distributed."):]
        if "strategies" in keys[key] and field != "activation_checkpointing" and \
                field not in c["strategy_fields"][strategy]:
            raise Reject("Unknown options for strategy '%s': ['%s']" % (strategy, field))
    return cfg, kv


# ---- torchrun ----------------------------------------------------------------------------------------------------

def torchrun_parser(contracts_dir):
    """PyTorch's own torchrun parser when Debian's python3-torch is there; else rebuilt from pytorch--1.13.json."""
    try:
        from torch.distributed.run import get_args_parser
        return get_args_parser(), "torch.distributed.run (python3-torch)"
    except ImportError:
        pass
    c = contract(contracts_dir, "pytorch--1.13")["torchrun_arguments"]
    p = _Parser(prog="torchrun", allow_abbrev=False, add_help=False)
    seen = set()
    for spec in c.values():
        names = tuple(spec["names"])
        if names in seen:
            continue
        seen.add(names)
        if spec.get("action") == "check_env":
            p.add_argument(*names, dest=spec["dest"], action="store_true")
        else:
            kw = {"type": {"int": int, "float": float}.get(spec.get("type"), str)}
            if spec.get("choices"):
                kw["choices"] = spec["choices"]
            p.add_argument(*names, dest=spec["dest"], default=spec.get("default"), **kw)
    p.add_argument("training_script", type=str)
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p, "rebuilt from tests/contracts/pytorch--1.13.json (python3-torch not importable)"
