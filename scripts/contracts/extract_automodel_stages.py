#!/usr/bin/env python3
"""Copy NeMo AutoModel's pipeline stage count and layer split, verbatim, out of the pinned source (stdlib only).

    scripts/contracts/extract_automodel_stages.py --mirrors DIR [-o tests/contracts/argv]

AutoModel takes no per-stage layout from paratune: nemo_automodel/components/distributed/pipelining/functional.py
turns distributed.pipeline.layers_per_stage, round_virtual_stages_to_pp_multiple and the schedule into a stage
count (calculate_virtual_stages) and spreads the layers over the stages (generate_hf_model_fqn_per_model_part).
The argv-path test (argv/check_argv.py) runs exactly those two functions on the overrides paratune emits, so a plan
AutoModel would cut differently, or refuse, fails the test. Nothing is edited; the one module-level name the
split reads (MULTIMODAL_SUFFIXES, encoder modules) is defined empty.
Output: automodel_stages--<version>.py (Apache License 2.0, as AutoModel; the header names commit, file and lines).
"""
import argparse
import ast
import os
import subprocess
import sys

VERSIONS = [("v0.5.0", "d02f49cb314554715aabb97e8dba6599c9f6e9e0")]  # tests/contracts/automodel--v0.5.0.json
PATH = "nemo_automodel/components/distributed/pipelining/functional.py"
FUNCTIONS = ("calculate_virtual_stages", "generate_hf_model_fqn_per_model_part")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", required=True)
    ap.add_argument("-o", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "contracts", "argv"))
    a = ap.parse_args()
    repo = os.path.join(a.mirrors, "NVIDIA-NeMo+Automodel", "repo")
    for version, ref in VERSIONS:
        text = subprocess.run(["git", "--git-dir", repo, "show", "%s:%s" % (ref, PATH)], check=True,
                              capture_output=True, text=True).stdout
        lines = text.split("\n")
        spans = [(n.lineno - 1, n.end_lineno) for n in ast.parse(text).body
                 if isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS]
        if len(spans) != len(FUNCTIONS):
            raise LookupError("%s: not all of %s found" % (PATH, ", ".join(FUNCTIONS)))
        head = ["# NeMo AutoModel %s (github:NVIDIA-NeMo/Automodel@%s), %s lines %s, copied by" %
                (version, ref, PATH, ", ".join("%d-%d" % (s + 1, e) for s, e in spans)),
                "# scripts/contracts/extract_automodel_stages.py. Apache License 2.0, (c) NVIDIA CORPORATION",
                "# (AutoModel's LICENSE). Do not edit: re-run the script.",
                "import math", "from typing import Optional", "",
                "# Module names of multimodal encoders the split puts on stage 0 (none for counting layers).",
                "MULTIMODAL_SUFFIXES = ()", ""]
        body = ["\n".join(lines[s:e]) + "\n\n" for s, e in spans]
        out = os.path.join(a.o, "automodel_stages--%s.py" % version)
        with open(out, "w") as fh:
            fh.write("\n".join(head) + "\n" + "\n".join(body).rstrip("\n") + "\n")
        print("wrote " + out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
