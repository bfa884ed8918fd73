#!/usr/bin/env python3
"""Copy torchtitan's pipeline stage split, verbatim, out of each pinned version's source (stdlib only).

    scripts/contracts/extract_torchtitan_split.py --mirrors DIR [-o tests/contracts/argv]

torchtitan takes no explicit stage layout on its command line: torchtitan/distributed/pipeline_parallel.py turns
pipeline_parallel_first/last_stage_less_layers, pipeline_parallel_layers_per_stage and the schedule into a stage
count and the layers of each stage. The argv-path test (argv/check_argv.py) runs exactly that code on the
arguments paratune emits, so a plan whose split torchtitan would build differently, or refuse, fails the test.
Two pieces are copied per version: the stage-count block (from the line that reads the first-stage weight to the
end of the count; inside pipeline_llm at v0.2.2, _get_pipeline_metadata at main) wrapped in a function of the
names it reads, and the split function itself. Nothing is edited but the indentation of the block.
Output: torchtitan_split--<version>.py (BSD 3-Clause, as torchtitan; the header names commit, file and lines).
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import textwrap

# version id, git ref (the commits tests/contracts/torchtitan--<version>.json were extracted at)
VERSIONS = [("v0.2", "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce"), ("main", "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a")]
PATH = "torchtitan/distributed/pipeline_parallel.py"


def top_level_function(text, name_re):
    """First and one-past-last line (0-based) of the module-level function whose name matches."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and re.fullmatch(name_re, node.name):
            return node.lineno - 1, node.end_lineno
    raise LookupError("no function %s in %s" % (name_re, PATH))


def stage_count_block(lines):
    start = next(i for i, l in enumerate(lines) if "input_weight = " in l and "first_stage_less_layers" in l)
    # the block ends before the split is generated (v0.2.2) or where the metadata function returns (main)
    end = next(i for i in range(start, len(lines))
               if lines[i].strip().startswith(("module_names_per_stage = ", "return num_virtual_stages")))
    while not lines[end - 1].strip():
        end -= 1
    return start, end


def render(version, ref, text):
    lines = text.split("\n")
    b0, b1 = stage_count_block(lines)
    f0, f1 = top_level_function(text, r"_?generate_llm_fqn_per_model_part")
    block = textwrap.indent(textwrap.dedent("\n".join(lines[b0:b1])), "    ")
    fname = re.match(r"def (\w+)", lines[f0]).group(1)
    return "\n".join([
        "# torchtitan %s (github:pytorch/torchtitan@%s), %s lines %d-%d and %d-%d, copied by" %
        (version, ref, PATH, b0 + 1, b1, f0 + 1, f1),
        "# scripts/contracts/extract_torchtitan_split.py. BSD 3-Clause License, (c) Meta Platforms, Inc. and",
        "# affiliates (torchtitan's LICENSE). Do not edit: re-run the script.",
        "import math",
        "",
        "",
        "def stage_count(job_config, parallelism, parallel_dims, is_single_stage_schedule, layers_per_stage,",
        "                num_layers):",
        block,
        "    return num_virtual_stages, input_weight, output_weight",
        "",
        "",
        "\n".join(lines[f0:f1]),
        "",
        "",
        "generate_split = %s" % fname,
        ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", required=True)
    ap.add_argument("-o", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "contracts", "argv"))
    a = ap.parse_args()
    repo = os.path.join(a.mirrors, "pytorch+torchtitan", "repo")
    for version, ref in VERSIONS:
        text = subprocess.run(["git", "--git-dir", repo, "show", "%s:%s" % (ref, PATH)], check=True,
                              capture_output=True, text=True).stdout
        out = os.path.join(a.o, "torchtitan_split--%s.py" % version)
        with open(out, "w") as fh:
            fh.write(render(version, ref, text))
        print("wrote " + out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
